"""This tree: held rows' nodes made (``HeldColumn.node``), column row indexes built and runs'
settles in one warm compile at N, and each run's scanned ids / index. usage: PYTHONPATH=. N"""

import collections
import sys

import derivgraph.compiler.ir as ir
from derivgraph.planner import compile_plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

size = int(sys.argv[1]) if len(sys.argv) > 1 else 100000
spec = scaling_spec()
compile_plan(scaling_model(size // 4), [spec])
counts: collections.Counter = collections.Counter()


def caller(depth: int) -> str:
    f = sys._getframe(depth)
    return f"{f.f_code.co_filename.split('derivgraph/')[-1]}:{f.f_code.co_name}:{f.f_lineno}"


node, rows, settle = ir.HeldColumn.node, ir.HeldColumn.rows, ir.Nodes._settle


def node_counted(self, row):  # noqa: ANN001, ANN202
    counts[("node", caller(3))] += 1
    return node(self, row)


def rows_counted(self):  # noqa: ANN001, ANN202
    if self._rows is None:
        counts[("rows-index", caller(3), caller(4), caller(5))] += 1
    return rows(self)


def settle_counted(self):  # noqa: ANN001, ANN202
    if self._held:
        counts[("settle", caller(2))] += 1
    return settle(self)


ir.HeldColumn.node, ir.HeldColumn.rows, ir.Nodes._settle = \
    node_counted, rows_counted, settle_counted
plan = compile_plan(scaling_model(size // 4), [spec])
for key, value in counts.most_common():
    print(value, key)
nodes = plan.graph.ir.nodes
print("nodes", len(nodes), "runs", len(nodes._held), "made", len(nodes._made))
print("runs: (ids scanned, indexed)", [(r._scanned, r._index is not None) for r in nodes._held])
