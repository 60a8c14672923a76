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
with tempfile.TemporaryDirectory() as tmp, tiny_llama_vllm(Path(tmp)) as (mc, vc):
    weights = [checkpoint(0), checkpoint(1)]
    model = cold_start(mc, vc, weights[0], "")
    os.environ["DERIVGRAPH_VLLM_MODE"] = "refill"
    for i in range(4):
        with torch.no_grad(): inplace.reload_weights(vc, model, iter(weights[i % 2].items()), None, True)
    st = session.state_for(model); g = st.guard; sw = g.watch.sweep
    print("live", len(sw.live), "acc", len(sw.acc_dicts), "lists", len(sw.lists), "list items", len(sw.list_values))
    for k, ga in sw.gathers.items(): print("gather", len(k), len(ga.acc))
    print("recheck", sorted(sw.recheck))
    for i in sorted(sw.recheck):
        d = sw.live[i]; print(i, type(d).__name__, len(d), [ (sw.acc_keys[b], type(sw.acc_values[b]).__name__, sw.acc_templates[b] is not None, sw.acc_dicts[b].get(sw.acc_keys[b]) is sw.acc_values[b]) for b in sw.acc_of[i]][:50])
    for i in sorted(sw.read):
        d = sw.live[i]; print("read", i, len(d), len(sw.acc_of[i]), [k for k in list(d)[:12]])
    plan = session.plan_for(model)
    print(plan.source("refill"))
