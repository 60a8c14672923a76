"""Which code makes the young storages: the sources' storage objects are made before the
compile here (so not young), and codegen._storages is counted by caller."""
import collections
import gc
import sys

import torch

import derivgraph.compiler.codegen as cg
from derivgraph.planner import compile_plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

calls = collections.Counter()
orig = cg._storages


def spy(ts):
    f = sys._getframe(1)
    calls[(f.f_code.co_name, f.f_lineno)] += len(ts)
    return orig(ts)


cg._storages = spy
spec = scaling_spec()
compile_plan(scaling_model(25000), [spec])
model = scaling_model(25000)
sources = {t.untyped_storage()._cdata for t in [*model.parameters(), *model.buffers()]}
calls.clear()
gc.collect()
gc.disable()
plan = compile_plan(model, [spec])
st = [o for o in gc.get_objects(0) if type(o) is torch.UntypedStorage]
print(len(st), "young storages with the sources' made before the compile; of sources:",
      sum(s._cdata in sources for s in st), "; codegen._storages by caller:", dict(calls))
