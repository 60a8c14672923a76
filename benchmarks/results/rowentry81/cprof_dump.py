import cProfile, gc, pstats, sys, marshal
from derivgraph.planner import compile_plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
size = int(sys.argv[1]); out = sys.argv[2]
spec = scaling_spec()
compile_plan(scaling_model(size // 4), [spec])
model = scaling_model(size // 4)
gc.collect(); gc.disable()
pr = cProfile.Profile(); pr.enable()
plan = compile_plan(model, [spec])
pr.disable()
st = pstats.Stats(pr).stats
res = {}
for func, (cc, nc, tt, ct, callers) in st.items():
    name = f"{func[0].split('/derivgraph/')[-1]}:{func[2]}"
    a = res.setdefault(name, [0, 0.0, 0.0]); a[0] += nc; a[1] += tt; a[2] += ct
import json; json.dump(res, open(out, "w"))
