"""Scratch: line_profiler over the plugin's session glue in steady refill reloads."""
import os, sys, tempfile
from pathlib import Path
os.environ["VLLM_TARGET_DEVICE"] = "cpu"
os.environ.setdefault("VLLM_PLUGINS", "derivgraph")
import torch
torch.set_num_threads(1)
try:
    from line_profiler import LineProfiler
except ImportError as exc:
    raise SystemExit("needs line-profiler (pip install -e '.[profile]')") from exc
from vllm_integration.tiny_llama import SPECS, checkpoint, cold_start, tiny_llama_vllm
os.environ.setdefault("DERIVGRAPH_SPECS", str(SPECS))
n = int(sys.argv[1]) if len(sys.argv) > 1 else 300
with tempfile.TemporaryDirectory() as tmp, tiny_llama_vllm(Path(tmp)) as (mc, vc):
    from vllm.model_executor.model_loader.reload import inplace
    from vllm_integration import completion, session, reload_wrappers, guarding
    weights = [checkpoint(0), checkpoint(1)]
    model = cold_start(mc, vc, weights[0], "")
    os.environ["DERIVGRAPH_VLLM_MODE"] = "refill"
    lp = LineProfiler()
    for f in (completion.complete, session.begin, session.end, session.note_names, completion._run_plan, guarding.restore_guard):
        lp.add_function(f)
    def reload(i):
        with torch.no_grad():
            inplace.reload_weights(vc, model, iter(weights[i % 2].items()), None, True)
    for i in range(30):
        reload(i)
    import gc; gc.collect(); gc.freeze()
    lp.enable_by_count()
    for i in range(n):
        reload(i)
    lp.disable_by_count()
    lp.print_stats(output_unit=1e-6)
