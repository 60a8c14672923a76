import cProfile, gc, pstats, sys, os
os.environ["DERIVGRAPH_STAMP"] = "0"
from derivgraph.compiler.bind import check_bindings, match_specs
from derivgraph.compiler.build import build_graph
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
spec = scaling_spec()
model = scaling_model(10000)
bound = match_specs(model, [spec]); check_bindings(bound)
gc.collect(); gc.disable()
prof = cProfile.Profile(); prof.enable()
build_graph(model, bound)
prof.disable()
st = pstats.Stats(prof)
for (f, l, name), (cc, nc, tt, ct, callers) in sorted(st.stats.items(), key=lambda kv: -kv[1][3])[:40]:
    print(f"{ct:8.3f} {tt:8.3f} {nc:8d} {f.split('derivgraph/')[-1]}:{l}({name})")
