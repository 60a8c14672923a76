"""The three moved sweeps on one compiled stamped 100k plan (25k layers), base (072b696's code,
copied below) against this tree's, alternating, 7 rounds, process CPU seconds:

* views + constants: ``BoundViews.views`` and ``planner._lower``'s constants sweep (this tree's
  pair shares one ``closed_nodes`` set: its cache is cleared every round, so each round pays
  for building it once);
* columns: ``evaluate_columns`` on a fresh ``CompileValues`` env (base: every stamped table,
  each row's node read; this tree: the closed tables, read through the template).

Both sides give the same answers (asserted).

    PYTHONPATH=TREE python3 sweeps_ab.py
"""

import gc
import time
from itertools import compress
from operator import attrgetter, not_
from typing import Any

import torch

from derivgraph import planner
from derivgraph.compiler import columns
from derivgraph.compiler.flat import OP_DTYPES
from derivgraph.compiler.graph import NodeRef, freeze, refs_in
from derivgraph.compiler.ir import NodeKind
from derivgraph.compiler.stamp import stamping
from derivgraph.ops import OPS, OpKind
from derivgraph.planner import CompileValues
from derivgraph.runtime.storage import BoundViews
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

with stamping(True):
    plan = planner.compile_plan(scaling_model(25000), [scaling_spec()])
graph = plan.graph
gc.disable()
_OP = attrgetter("op")
bound: dict[str, Any] = {**plan.tensors.sources, **plan.tensors.constants}
bound.update((k, e.storage) for k, e in plan.entries.items() if isinstance(e.storage, torch.Tensor))


def base_views() -> dict[str, Any]:
    """072b696's BoundViews.views."""
    views = BoundViews(graph, bound)
    out: dict[str, torch.Tensor] = {}
    nodes = graph.nodes
    order = graph.ordered()
    other = frozenset(name for name, op in OPS.items() if op.kind is not OpKind.VIEW)
    ops = map(_OP, map(nodes.__getitem__, order))
    for node_id in compress(order, map(not_, map((other | {None}).__contains__, ops))):
        node = nodes[node_id]
        if node.kind is NodeKind.OP and OPS[node.op].kind is OpKind.VIEW \
                and len(refs_in(node.args)) == 1 and node.inputs[0] in views.env:
            out[node_id] = views.env[node_id] = views.run_node(node)
    return out


def base_constants(values: dict[str, Any]) -> dict[str, Any]:
    deps = graph.source_deps()
    return {n: values[n] for n, node in graph.nodes.items()
            if node.kind is NodeKind.OP and not deps[n]
            and isinstance(values.get(n), torch.Tensor)}


def mine_constants(values: dict[str, Any]) -> dict[str, Any]:
    """This tree's planner._lower lines (copied: the function also lowers and runs)."""
    from derivgraph.compiler.layers import closed_nodes
    deps, nodes = graph.source_deps(), graph.nodes
    skip = closed_nodes(graph, lambda table: all(
        nodes[t].kind is not NodeKind.OP or deps[t] for t in table.template))
    rest = compress(nodes, map(not_, map(skip.__contains__, nodes))) if skip else nodes
    return {n: values[n] for n in rest
            if nodes[n].kind is NodeKind.OP and not deps[n]
            and isinstance(values.get(n), torch.Tensor)}


def base_columns(env: dict[str, Any], run_node: Any) -> int:
    """072b696's evaluate_columns / _column / _operands, inlined."""
    nodes, done = graph.nodes, 0
    for table in graph.stamps:
        if len(table) < columns.MIN_COLUMN:
            continue
        for k, first_id in enumerate(table.template):
            first = nodes.get(first_id)
            if first is None or first.kind is not NodeKind.OP or first.op not in columns._EXACT \
                    or first.kwargs:
                continue
            column = table.column(k)
            if column[0] in env:
                continue
            col = [nodes[i] for i in column]
            op, width = first.op, len(first.args)
            if any(n.kind is not NodeKind.OP or n.op != op or n.kwargs or len(n.args) != width
                   for n in col):
                continue
            layout, call, bad = None, [], False
            for j, arg in enumerate(first.args):
                if type(arg) is NodeRef:
                    tensors = []
                    for r in [n.args[j] for n in col]:
                        value = env.get(r.id)
                        if value is None:
                            value = env[r.id] = run_node(nodes[r.id])
                        tensors.append(value)
                    shapes = {t.shape for t in tensors}
                    dtypes = {t.dtype for t in tensors}
                    devices = {t.device for t in tensors}
                    assert len(shapes) == len(dtypes) == len(devices) == 1
                    mine = (*shapes, *dtypes, *devices)
                    assert mine[1] in OP_DTYPES and layout in (None, mine)
                    layout = mine
                    call.append(torch.stack(tensors))
                else:
                    frozen = freeze(arg)
                    bad = any(a is not arg and (type(a) is not type(arg) or freeze(a) != frozen)
                              for a in [n.args[j] for n in col])
                    call.append(arg)
            assert not bad
            out = OPS[op].fn(*call)
            env.update(zip(column, out.unbind(0)))
            done += 1
    return done


values = CompileValues(graph).run()
assert base_views() == BoundViews(graph, bound).views()
assert base_constants(values).keys() == mine_constants(values).keys()


def run_base() -> tuple[float, float]:
    t = time.process_time()
    base_views()
    base_constants(values)
    t1 = time.process_time()
    interp = CompileValues(graph)
    with torch.no_grad():
        assert base_columns(interp.env, interp.run_node) == 2
    return t1 - t, time.process_time() - t1


def run_mine() -> tuple[float, float]:
    graph.closed_cache = (-1, None)
    t = time.process_time()
    BoundViews(graph, bound).views()
    mine_constants(values)
    t1 = time.process_time()
    interp = CompileValues(graph)
    with torch.no_grad():
        assert columns.evaluate_columns(graph, interp.env, interp.source_at) == 2
    return t1 - t, time.process_time() - t1


res: dict[str, list[tuple[float, float]]] = {"base 072b696": [], "readers41": []}
for _ in range(7):
    for label, fn in zip(res, (run_base, run_mine)):
        res[label].append(fn())
        gc.collect()
for label, v in res.items():
    for i, what in enumerate(("views+constants", "columns")):
        xs = [x[i] for x in v]
        print(f"{label:13s} {what:16s} median {sorted(xs)[3]:.4f}  all {[round(x, 4) for x in xs]}")  # noqa: T201
