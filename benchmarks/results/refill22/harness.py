"""Profile the plugin's completion on the tiny Llama (refill22 helper harness)."""
import os, sys, time, gc, tempfile, logging, cProfile, pstats, statistics
from pathlib import Path
ROOT = Path(os.getcwd())
os.environ["VLLM_TARGET_DEVICE"] = "cpu"
os.environ.setdefault("VLLM_PLUGINS", "derivgraph")
os.environ.setdefault("DERIVGRAPH_SPECS", str(ROOT / "tests" / "fixtures" / "vllm_llama.yaml"))
logging.basicConfig(level=logging.ERROR)
sys.path.insert(0, str(ROOT))
import torch
torch.set_num_threads(1)
from vllm.model_executor.model_loader.reload import inplace
from tests.fixtures.vllm_llama_reload import checkpoint, cold_start, tiny_llama_vllm
from vllm_integration import session
MODE = sys.argv[1] if len(sys.argv) > 1 else "time"
N = int(sys.argv[2]) if len(sys.argv) > 2 else 200
with tempfile.TemporaryDirectory() as tmp, tiny_llama_vllm(Path(tmp)) as (mc, vc):
    weights = [checkpoint(0), checkpoint(1)]
    model = cold_start(mc, vc, weights[0], "")
    plan = session.plan_for(model)
    print("entries", list(plan.entries))
    state = session.state_for(model)
    captured = {}
    orig = session._complete
    def grab(*a, **k):
        captured["args"] = (a, k)
        return orig(*a, **k)
    session._complete = grab
    os.environ["DERIVGRAPH_VLLM_MODE"] = "refill"
    def reload(i):
        with torch.no_grad():
            inplace.reload_weights(vc, model, iter(weights[i % 2].items()), None, True)
    for i in range(3): reload(i)
    gc.collect(); gc.freeze()
    if MODE == "prof":
        pr = cProfile.Profile(time.thread_time)
        session._complete = lambda *a, **k: (pr.enable(), orig(*a, **k), pr.disable())[1]
        for i in range(N): reload(i)
        st = pstats.Stats(pr); st.sort_stats("tottime").print_stats(45)
        st.sort_stats("cumtime").print_stats(40)
    else:
        ts = {"complete": [], "refill": [], "guard": []}
        g = state.guard
        r0, g0 = type(plan).refill, type(g).restore
        def tr(self, **k):
            s = time.thread_time(); out = r0(self, **k); ts["refill"].append(time.thread_time() - s); return out
        def tg(self, *a, **k):
            s = time.thread_time(); out = g0(self, *a, **k); ts["guard"].append(time.thread_time() - s); return out
        type(plan).refill = tr; type(g).restore = tg
        def tc(*a, **k):
            s = time.thread_time(); out = orig(*a, **k); ts["complete"].append(time.thread_time() - s); return out
        session._complete = tc
        for i in range(N): reload(i)
        for k, v in ts.items():
            print(k, "median %.1f q10 %.1f min %.1f us" % (statistics.median(v)*1e6, statistics.quantiles(v, n=10)[0]*1e6, min(v)*1e6))
    print("moved", plan.moved())
    if MODE == "source":
        print(plan.source("refill"))
        t = plan._refill_table
        print("table ids", t.ids, "flat", t.flat, "spans", t.spans)
        print("scalars", [e.id for e in plan.holders._scalars])
        print("sources", len(plan.holders._sources))
        print("hops", len(plan.holders.hops.prefixes))
        g = state.guard
        print("guard startup", len(g.startup), "watch live", len(g.watch.live))
    if MODE == "source":
        t = plan._refill_table
        print("flat", [(a, b, r.__dict__ if hasattr(r, '__dict__') else r) for a, b, r in t.flat], "rest_spans", t.rest_spans, "spans", t.spans, "ids", t.ids)
        print([ (s.shape, s.dtype) for s in t.storages])
