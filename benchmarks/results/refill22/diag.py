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
    plan = session.plan_for(model)
    state = session.state_for(model)
    g = state.guard
    os.environ["DERIVGRAPH_VLLM_MODE"] = "refill"
    orig = session._complete
    def peek(*a, **k):
        h = plan.holders
        sweep = g.watch.sweep
        print("guard tagged", len(sweep.tagged), "moved", len(sweep.tags.changed()), "recheck", len(sweep.recheck), "lists", len(sweep.lists), "acc", len(sweep.acc_dicts))
        print("guard startup", len(g.startup), "moved-at", len(g._at), "opaque", len(g.watch.opaque), "recheck", sorted(g.watch.sweep.recheck)[:12])
        return orig(*a, **k)
    session._complete = peek
    def reload(i):
        with torch.no_grad():
            inplace.reload_weights(vc, model, iter(weights[i % 2].items()), None, True)
    for i in range(4): reload(i)
    print(plan.holders.hops.prefixes)
    print([ (s) for s, *_ in plan.holders._sources])
