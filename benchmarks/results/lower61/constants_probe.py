"""In-process probe of ``_lower``'s constants sweep on one compiled 100k stamped scaling plan
(the compile's values kept): the base tree's form (``closed_nodes`` of the tables whose
template has no source-free op: a set of every row's id, then every node tested against it)
against this tree's (those tables cut from the order at its spans, ``order_without_rows``,
then the nodes tested against the small set left). The closed rows' cache is dropped before
each call (as a compile finds it); with ``--cold`` a 64 MB buffer is written first. Both
answers are asserted equal (keys in order, the same objects).

    PYTHONPATH=. python3 benchmarks/results/lower61/constants_probe.py [--rounds 9] [--cold]
"""

from __future__ import annotations

import argparse
import gc
import operator
import statistics
import time
from itertools import compress
from typing import Any

import torch

from derivgraph import planner
from derivgraph.compiler.ir import NodeKind
from derivgraph.compiler.layers import closed_layers, closed_nodes, order_without_rows
from derivgraph.compiler.stamp import stamping
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--cold", action="store_true")
    args = parser.parse_args()
    seen: dict[str, Any] = {}
    real = planner._lower

    def spy(plan: Any, values: Any, *a: Any, **k: Any) -> None:
        seen["plan"], seen["values"] = plan, values
        real(plan, values, *a, **k)

    planner._lower = spy
    with stamping(True):
        planner.compile_plan(scaling_model(25000), [scaling_spec()])
    planner._lower = real
    graph, values = seen["plan"].graph, seen["values"]
    deps, nodes = graph.source_deps(), graph.nodes

    def answered(table: Any) -> bool:
        return all(nodes[t].kind is not NodeKind.OP or deps[t] for t in table.template)

    def keep(rest: Any) -> dict[str, Any]:
        return {n: values[n] for n in rest if nodes[n].kind is NodeKind.OP and not deps[n]
                and isinstance(values.get(n), torch.Tensor)}

    def base() -> dict[str, Any]:
        skip = closed_nodes(graph, answered)
        return keep(compress(nodes, map(operator.not_, map(skip.__contains__, nodes)))
                    if skip else nodes)

    def mine() -> dict[str, Any]:
        tables = [t for t in closed_layers(graph) if answered(t)]
        return keep(filter(set(order_without_rows(graph, tables)).__contains__, nodes)
                    if tables else nodes)

    a, b = base(), mine()
    assert list(a) == list(b) and all(map(operator.is_, a.values(), b.values()))
    junk = bytearray(64 << 20)
    times: dict[str, list[float]] = {"base": [], "mine": []}
    gc.collect()
    gc.disable()
    for k in range(args.rounds):
        for name, fn in (("base", base), ("mine", mine)) if k % 2 == 0 else \
                (("mine", mine), ("base", base)):
            graph.closed_cache = (-1, None)
            if args.cold:
                junk[::64] = bytes(len(junk[::64]))
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    gc.enable()
    wins = sum(m < b for m, b in zip(times["mine"], times["base"]))
    for name, ts in times.items():
        print(f"{name} median {statistics.median(ts):.4f}  {[round(t, 4) for t in ts]}")  # noqa: T201
    print(f"mine faster than base in {wins} of {args.rounds} rounds")  # noqa: T201


if __name__ == "__main__":
    main()
