"""What the compile's UntypedStorage objects cost the collector (a measurement, not a change):
young objects and the first gc.collect(0) after one warm compile at argv[1] (default 100000),
as is ("base") and with codegen's ``_storages`` answered by the tensors themselves
("no-storage-objects": NOT a valid plan: the pass's held lists then keep the sources'
tensors, not their startup StorageImpls; it only prices the 50k source storage objects that
codegen alone makes). Rounds alternate. Then the same price in isolation: gc(0) after making
N preserved storage objects of old tensors."""
import gc, statistics, sys, time
import torch
from derivgraph.planner import compile_plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
from derivgraph.compiler import codegen
size = int(sys.argv[1]) if len(sys.argv) > 1 else 100000
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
spec = scaling_spec()
compile_plan(scaling_model(size // 4), [spec])
real_storages, real_method = codegen._storages, torch.Tensor.untyped_storage
def one(label):
    model = scaling_model(size // 4)
    gc.collect(); gc.disable()
    if label != "base":
        codegen._storages = lambda ts: list(ts)  # the pass's held lists: the tensors
    try:
        t = time.perf_counter(); plan = compile_plan(model, [spec]); t = time.perf_counter() - t
    finally:
        codegen._storages = real_storages
    n = len(gc.get_objects(0)); s = sum(type(o) is torch.UntypedStorage for o in gc.get_objects(0))
    g = time.perf_counter(); gc.collect(0); g = time.perf_counter() - g
    gc.enable()
    return t, n, s, g
out = {"base": [], "no-storage-objects": []}
for r in range(rounds):
    for label in (("base", "no-storage-objects") if r % 2 == 0 else ("no-storage-objects", "base")):
        out[label].append(one(label))
for label, rs in out.items():
    print(f"{label:20s} young {rs[0][1]} (UntypedStorage {rs[0][2]}), compile median "
          f"{statistics.median(r[0] for r in rs):.3f} s, gc(0) median "
          f"{statistics.median(r[3] for r in rs)*1e3:.1f} ms (all {[round(r[3]*1e3,1) for r in rs]})")

for n in (50000, 125000):
    ts = [torch.empty(2) for _ in range(n)]
    gc.collect(); gc.disable()
    t = time.perf_counter(); held = list(map(torch.Tensor.untyped_storage, ts)); t = time.perf_counter() - t
    del held  # preserved with their StorageImpls: still alive, still young
    y = len(gc.get_objects(0))
    g = time.perf_counter(); gc.collect(0); g = time.perf_counter() - g
    gc.enable()
    print(f"isolated: {n} untyped_storage() objects made in {t*1e3:.1f} ms; young {y}; gc(0) {g*1e3:.1f} ms")
