"""Per-helper thread-CPU timings inside a refill (e2e29 profile: wrappers around the plan's and
the accessors' pieces, in situ after vLLM's reload). usage: PYTHONPATH=. python3 profile_helpers.py"""
import os, sys, time, gc, tempfile, logging, statistics
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
from derivgraph.runtime import engine as en, accessors as ac, holders as ho, storage as st, programs as pr, plan as pl
from derivgraph import addresses as ad, dict_versions as dv
T = {}
def wrap(owner, name, label=None):
    f = getattr(owner, name); label = label or f"{owner.__name__}.{name}"
    def w(*a, **k):
        s = time.thread_time_ns(); out = f(*a, **k); T.setdefault(label, []).append((time.thread_time_ns()-s)/1e3); return out
    setattr(owner, name, w)
for o, n in [(en.Taken, "copy"), (en.Layouts, "match"), (en.RefillTable, "take"), (ac.HolderTable, "current"),
             (ac.HopTable, "refresh"), (ac.HopTable, "intact"), (ac.HolderTable, "intact"), (ac.HolderTable, "at_startup_addresses"),
             (ac.HolderTable, "settle"), (ac.HopTable, "settle"), (ac.HolderTable, "rebind"),
             (st.BoundTensors, "staged"), (pr.Programs, "execute"), (pr.Programs, "partial"), (pl.Plan, "_rest_for"),
             (ho.Holders, "_sources_held"), (ad.AtAddresses, "intact"), (ho.Holders, "_scalars_current"),
             (pl.Plan, "_set_scalars"), (pl.Plan, "_take_engine_values"), (pl.Plan, "rebind"), (ho.Holders, "moved"), (ho.Holders, "sources_intact"), (st.BoundTensors, "restore_storage"), (pl.Plan, "restore_containers"), (pl.Plan, "refill")]:
    wrap(o, n)
N = 60
with tempfile.TemporaryDirectory() as tmp, tiny_llama_vllm(Path(tmp)) as (mc, vc):
    weights = [checkpoint(0), checkpoint(1)]
    model = cold_start(mc, vc, weights[0], "")
    os.environ["DERIVGRAPH_VLLM_MODE"] = "refill"
    plan = session.plan_for(model)
    (nodes, prog), = [(n, p) for n, p in plan.programs._partial.items() if n] or [(None, None)]
    for i in range(4):
        with torch.no_grad(): inplace.reload_weights(vc, model, iter(weights[i % 2].items()), None, True)
    (nodes, prog), = [(n, p) for n, p in plan.programs._partial.items() if n]
    f = prog.fn
    import functools
    @functools.wraps(f)
    def pf(*a):
        s = time.thread_time_ns(); out = f(*a); T.setdefault("partial pass fn", []).append((time.thread_time_ns()-s)/1e3); return out
    object.__setattr__(prog, "fn", pf)
    T.clear(); gc.collect(); gc.freeze()
    for i in range(N):
        with torch.no_grad(): inplace.reload_weights(vc, model, iter(weights[i % 2].items()), None, True)
    for k, v in T.items():
        print(f"{k:40s} calls/reload {len(v)/N:5.2f}  median {statistics.median(v):8.1f}  sum/reload {sum(v)/N:8.1f}")
    t = plan._refill_table
    print("flat", [(a, b) for a, b, _ in t.flat], "spans", t.rest_spans, "n", len(t.ids))
