import os, sys, tempfile, logging
from pathlib import Path
ROOT = Path(os.getcwd())
os.environ["VLLM_TARGET_DEVICE"] = "cpu"
os.environ.setdefault("VLLM_PLUGINS", "derivgraph")
os.environ.setdefault("DERIVGRAPH_SPECS", str(ROOT / "tests" / "fixtures" / "vllm_llama.yaml"))
logging.basicConfig(level=logging.ERROR)
sys.path.insert(0, str(ROOT))
import torch
from vllm.model_executor.model_loader.reload import inplace
from tests.fixtures.vllm_llama_reload import checkpoint, cold_start, tiny_llama_vllm
from vllm_integration import session
with tempfile.TemporaryDirectory() as tmp, tiny_llama_vllm(Path(tmp)) as (mc, vc):
    weights = [checkpoint(0), checkpoint(1)]
    model = cold_start(mc, vc, weights[0], "")
    os.environ["DERIVGRAPH_VLLM_MODE"] = "refill"
    for i in range(4):
        with torch.no_grad(): inplace.reload_weights(vc, model, iter(weights[i % 2].items()), None, True)
    plan = session.plan_for(model); h = plan.holders
    print("unproven", h._unproven()); print("startup_sources other", h._startup_sources(plan.source_ptrs)[1])
    print("entries", [(k, e.node.kind) for k, e in plan.entries.items()])
    print("table", [e.node.id for e in h.table.entries]); print("refill ids", plan._refill_table.ids)
    print("scalars", len(h._scalars), "startup", len(plan.tensors.startup_addresses().tensors))
    for s in plan.steps: print("step", s.action, s.node, s.target)
    print("taken_rest", {k: sorted(v) if v else v for k, v in plan._taken_rest.items()})
