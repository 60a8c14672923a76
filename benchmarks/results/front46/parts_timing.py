"""Per-part wall time inside build_graph (stamped scaling 100k, collector off), by wrappers
(each adds ~0.2 us a call): params, the template key, the formula facts, the replay run,
place_inputs, own, add_row, check_cycles, infer. 3 rounds.

    PYTHONPATH=<tree> python parts_timing.py > parts_<commit>.txt
"""
import gc, time, functools
from derivgraph.compiler.bind import check_bindings, match_specs
from derivgraph.compiler import build, stamp, replay, graph as G, stamp_params, instances
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
times = {}
def wrap(owner, name, label):
    fn = getattr(owner, name)
    @functools.wraps(fn)
    def timed(*a, **k):
        s = time.perf_counter()
        try: return fn(*a, **k)
        finally: times[label] = times.get(label, 0) + time.perf_counter() - s
    setattr(owner, name, timed)
wrap(stamp.Stamper, "_kinds", "_key") if hasattr(stamp.Stamper, "_kinds") else wrap(stamp, "_key", "_key"); wrap(stamp, "_matches", "facts(formula)")
wrap(stamp_params.ParamStamper, "resolve", "params")
wrap(replay.Replay, "run", "run"); wrap(G.DerivedGraph, "place_inputs", "place_inputs")
wrap(stamp.Template, "own", "own"); wrap(instances.InstanceTable, "add_row", "add_row")
wrap(stamp.Stamper, "resolve_bound", "resolve_bound")
wrap(build, "_check_cycles", "check_cycles"); wrap(build, "infer_shapes", "infer"); 
spec = scaling_spec()
for r in range(3):
    model = scaling_model(25000); bound = match_specs(model, [spec]); check_bindings(bound)
    times.clear(); gc.collect(); gc.disable()
    s = time.perf_counter(); build.build_graph(model, bound); tot = time.perf_counter() - s
    gc.enable()
    print(round(tot, 3), {k: round(v, 3) for k, v in times.items()})
