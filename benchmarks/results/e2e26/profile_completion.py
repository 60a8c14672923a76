"""Per-function thread-CPU timings inside the plugin's completion, in situ (cold right after vLLM's reload): wrappers around the pieces named below; usage: PYTHONPATH=. python3 profile_completion.py N (run in the tree measured)."""
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
from vllm_integration import session, completion
from derivgraph.guard import sweep as sw, watch as wa, guard as gu
from derivgraph import dict_versions as dv, addresses as ad
from derivgraph.guard import template as te
T = {}
def wrap(owner, name, label=None):
    f = getattr(owner, name); label = label or f"{owner.__name__}.{name}"
    def w(*a, **k):
        s = time.thread_time_ns(); out = f(*a, **k); T.setdefault(label, []).append((time.thread_time_ns()-s)/1e3); return out
    setattr(owner, name, w)
wrap(session, "_complete"); wrap(completion, "restore_guard"); wrap(completion, "_run_plan")
wrap(completion, "check_folds"); wrap(completion, "verify_specs_enabled")
wrap(sw.Sweep, "dirty"); wrap(sw.Sweep, "_compare"); wrap(sw.Sweep, "settle"); wrap(sw.Sweep, "_lists")
wrap(wa.Watch, "survey"); wrap(wa.Watch, "_kept"); wrap(dv.DictVersions, "changed"); wrap(dv.DictVersions, "adopt")
wrap(gu.Guard, "_moved_storage"); wrap(gu.Guard, "_report"); wrap(wa, "harmless"); wrap(sw, "harmless", "sweep.harmless")
wrap(ad.AtAddresses, "intact"); wrap(ad.Addresses, "kept")
if hasattr(ad, "SharedWords"):
    wrap(ad.SharedWords, "read")
N = int(sys.argv[1]) if len(sys.argv) > 1 else 60
with tempfile.TemporaryDirectory() as tmp, tiny_llama_vllm(Path(tmp)) as (mc, vc):
    weights = [checkpoint(0), checkpoint(1)]
    model = cold_start(mc, vc, weights[0], "")
    os.environ["DERIVGRAPH_VLLM_MODE"] = "refill"
    for i in range(4):
        with torch.no_grad(): inplace.reload_weights(vc, model, iter(weights[i % 2].items()), None, True)
    T.clear(); gc.collect(); gc.freeze()
    for i in range(N):
        with torch.no_grad(): inplace.reload_weights(vc, model, iter(weights[i % 2].items()), None, True)
    for k, v in T.items():
        print(f"{k:40s} calls/reload {len(v)/N:5.2f}  median {statistics.median(v):8.1f}  sum/reload {sum(v)/N:8.1f}")
    st = session.state_for(model); g = st.guard
    print("watched dicts", len(g.watch.sweep.tagged), "recheck", len(g.watch.sweep.recheck), "read", len(g.watch.sweep.read))
    print("opaque nodes", len(g.watch.opaque), "startup", len(g.startup), "at", len(g._at))
