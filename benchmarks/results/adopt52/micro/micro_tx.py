"""In-process: time ModelTransaction(...) on the scaling model's owners, with a warm reader."""
import gc, statistics, sys, time
import torch
from derivgraph.compiler.owners import PathReader
from derivgraph.compiler.transaction import ModelTransaction
from derivgraph.tools.bench_scaling import scaling_model
n = int(sys.argv[1]); reps = int(sys.argv[2])
model = scaling_model(n // 4)
owners = {f"layers.{i}" for i in range(n // 4)}
gc.disable()
ts = []
for _ in range(reps):
    reader = PathReader(model)
    reader.owners(sorted(owners))
    t0 = time.process_time(); ModelTransaction(model, owners, [], reader); ts.append(time.process_time() - t0)
print(f"txn median {statistics.median(ts):.4f} min {min(ts):.4f}")
