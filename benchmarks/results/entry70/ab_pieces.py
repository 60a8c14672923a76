"""entry70 A/B, in one process, interleaved (A = base 9143d0a7's code, B = this tree's).

Pieces: each changed step run on the state of one real 100k scaling compile (A and B
alternating, each after ``gc.collect()`` with the collector off). Whole compiles: the base's
``planner._prepare``/``_lower`` (their source read from the base tree, compiled into this
tree's module) against this tree's, on fresh models, the order alternating per round.
Usage (from the tree root):

    PYTHONPATH=. python3 benchmarks/results/entry70/ab_pieces.py [--base /tmp/base70]
        [--rounds 11] [--layers 25000] [--compiles 7]
"""

from __future__ import annotations

import argparse
import ast
import gc
import operator
import os
import statistics
import time
from collections.abc import Callable
from itertools import compress, repeat
from typing import Any

import torch

from derivgraph import planner
from derivgraph.adoption import ViewOf
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec


def _base_function(base: str, rel: str, name: str, cls: str | None, namespace: dict[str, Any]
                   ) -> Callable[..., Any]:
    """Function ``name`` (of class ``cls``) of the base tree's file ``rel``, compiled into
    ``namespace`` (this tree's module globals: the same helpers)."""
    with open(os.path.join(base, rel)) as f:
        body = ast.parse(f.read()).body
    if cls is not None:
        body = next(n for n in body if isinstance(n, ast.ClassDef) and n.name == cls).body
    node = next(n for n in body if isinstance(n, ast.FunctionDef) and n.name == name)
    module = ast.Module(body=[node], type_ignores=[])
    scope = dict(namespace)
    exec(compile(module, f"{base}/{rel}", "exec"), scope)
    return scope[name]


def _timed(fn: Callable[[], Any]) -> float:
    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter()
        fn()
        return time.perf_counter() - start
    finally:
        gc.enable()


def _report(name: str, a: list[float], b: list[float]) -> None:
    wins = sum(y < x for x, y in zip(a, b))
    print(f"{name}: A median {statistics.median(a) * 1e3:.2f} ms, B median "
          f"{statistics.median(b) * 1e3:.2f} ms, B beat A in {wins} of {len(a)}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--base", default="/tmp/base70")
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument("--layers", type=int, default=25000)
    parser.add_argument("--compiles", type=int, default=7)
    args = parser.parse_args()
    print("load average before:", os.getloadavg(), flush=True)
    spec = scaling_spec()
    captured: dict[str, Any] = {}
    new_prepare, new_lower = planner._prepare, planner._lower

    def spy(plan: Any, values: Any, *rest: Any, **kw: Any) -> Any:
        captured["plan"], captured["values"] = plan, values
        return new_lower(plan, values, *rest, **kw)

    planner._lower = spy
    spied_prepare = planner._prepare

    def spy_prepare(*a: Any, **kw: Any) -> Any:
        out = spied_prepare(*a, **kw)
        captured["planned"], captured["order"] = out[2], kw.get("order", a[5] if len(a) > 5
                                                                  else None)
        return out

    planner._prepare = spy_prepare
    planner.compile_plan(scaling_model(args.layers), [spec])
    planner._prepare, planner._lower = new_prepare, new_lower
    plan, values, planned = captured["plan"], captured["values"], captured["planned"]
    rest = captured["order"][-1]

    # pieces -----------------------------------------------------------------------------
    def views_a() -> None:
        list((e.node, values.get(e.id), values.get(x.base))
             for e, x in planned if isinstance(x, ViewOf))

    def views_b() -> None:
        list((e.node, values.get(e.id), values.get(x.base))
             for e, x in map(planned.__getitem__, rest) if isinstance(x, ViewOf))

    ids = plan.constant_entries

    def consts_a() -> None:
        {n: value for n in ids if isinstance(value := values.get(n), torch.Tensor)}

    def consts_b() -> None:
        planner._tensor_values(ids, values)

    graph = plan.graph
    deps, nodes = graph.source_deps(), graph.nodes
    from derivgraph.compiler.ir import NodeKind

    def ops_a() -> None:
        {n: values[n] for n in nodes if nodes[n].kind is NodeKind.OP and not deps[n]
         and isinstance(values.get(n), torch.Tensor)}

    def ops_b() -> None:
        ids = list(nodes)
        ops = list(compress(ids, map(operator.is_, map(planner._KIND, map(nodes.__getitem__,
                                                                            ids)),
                                     repeat(NodeKind.OP))))
        planner._tensor_values(
            list(compress(ops, map(operator.not_, map(deps.__getitem__, ops)))), values)

    pieces = [("views at per-row positions (_prepare)", views_a, views_b),
              ("tensors.constants (_lower, every node)", ops_a, ops_b),
              ("constant_values (_lower)", consts_a, consts_b)]
    for name, a_fn, b_fn in pieces:
        a: list[float] = []
        b: list[float] = []
        for r in range(args.rounds):
            if r % 2:
                b.append(_timed(b_fn))
                a.append(_timed(a_fn))
            else:
                a.append(_timed(a_fn))
                b.append(_timed(b_fn))
        _report(name, a, b)

    # whole compiles ---------------------------------------------------------------------
    old_prepare = _base_function(args.base, "derivgraph/planner.py", "_prepare", None,
                                 vars(planner))
    old_lower = _base_function(args.base, "derivgraph/planner.py", "_lower", None,
                               vars(planner))

    def use(old: bool) -> None:
        planner._prepare = old_prepare if old else new_prepare
        planner._lower = old_lower if old else new_lower

    a, b = [], []
    for r in range(args.compiles):
        for old in ((True, False) if r % 2 == 0 else (False, True)):
            use(old)
            model = [scaling_model(args.layers)]
            (a if old else b).append(_timed(lambda m=model: planner.compile_plan(m.pop(), [spec])))
    use(False)
    if a:
        _report("whole compile_plan (warm)", a, b)
    print("load average after:", os.getloadavg(), flush=True)


if __name__ == "__main__":
    main()
