"""Count reads of Graph.nodes (by caller and method) and held-node makes in one warm compile.

Ran on the base tree (where ``Graph.nodes`` is a plain dict, replaced here by a counting one):
every site's count is independent of the size. usage: PYTHONPATH=TREE python3 count_reads.py N
"""

import collections
import sys

import derivgraph.compiler.ir as ir
from derivgraph.planner import compile_plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

size = int(sys.argv[1]) if len(sys.argv) > 1 else 100000
spec = scaling_spec()
compile_plan(scaling_model(size // 4), [spec])
counts: collections.Counter = collections.Counter()
made: collections.Counter = collections.Counter()


def caller(depth: int = 2) -> str:
    f = sys._getframe(depth)
    return f"{f.f_code.co_filename.split('derivgraph/')[-1]}:{f.f_code.co_name}:{f.f_lineno}"


def counted(name: str, method: str):  # noqa: ANN201
    def read(self, *args):  # noqa: ANN001, ANN202
        counts[(name, caller())] += 1
        return getattr(dict, method)(self, *args)
    return read


CountingDict = type("CountingDict", (dict,), {
    "__getitem__": counted("getitem", "__getitem__"), "get": counted("get", "get"),
    "__contains__": counted("in", "__contains__"), "__iter__": counted("iter", "__iter__"),
    "items": counted("items", "items"), "values": counted("values", "values"),
    "keys": counted("keys", "keys"), "__len__": counted("len", "__len__"),
    "update": counted("update", "update"), "__setitem__": counted("set", "__setitem__")})
orig_init = ir.Graph.__init__


def init(self) -> None:  # noqa: ANN001
    orig_init(self)
    self.nodes = CountingDict()


ir.Graph.__init__ = init
orig_made = ir.HeldNode.made


def made_counted(self):  # noqa: ANN001, ANN202
    made[caller(2)] += 1
    return orig_made(self)


ir.HeldNode.made = made_counted
plan = compile_plan(scaling_model(size // 4), [spec])
for key, value in sorted(counts.items(), key=lambda kv: -kv[1]):
    print(f"{value:8d} {key}")
print("made:")
for key, value in made.most_common():
    print(f"{value:8d} {key}")
