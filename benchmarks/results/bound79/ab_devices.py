"""In-process A/B: the run's devices by the kept sweep (own_first) vs each row's rule, inside
build._derived_columns (the devices_of call timed alone), interleaved."""
import gc, os, time, sys
from derivgraph.compiler import build, resolve
from derivgraph.compiler.bind import match_specs
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
model = scaling_model(25000); spec = scaling_spec()
times = {"rows": [], "proof": []}
real = resolve.devices_of
mode = ["proof"]
def timed(modules, decl, plain, sweeps=None):
    t = time.perf_counter()
    out = real(modules, decl, plain, sweeps if mode[0] == "proof" else None)
    times[mode[0]].append(time.perf_counter() - t)
    return out
build.devices_of = timed
gc.disable()
for r in range(int(sys.argv[1]) if len(sys.argv) > 1 else 8):
    for m in (("rows", "proof") if r % 2 else ("proof", "rows")):
        mode[0] = m
        build.build_graph(model, match_specs(model, [spec]))
        gc.enable(); gc.collect(); gc.disable()
for k, v in times.items():
    v = sorted(v); print(k, f"median {v[len(v)//2]*1e3:.2f} ms  min {v[0]*1e3:.2f}  n={len(v)}")
print("load", os.getloadavg())
