"""Line profile of the plugin's per-reload work outside the refill on the tiny vLLM Llama (refill
mode), each plugin reload after an ``off`` one (as the benchmark alternates them, so the plugin
runs cold after vLLM's reload).

    PATH=/work/venv/bin:$PATH PYTHONPATH=$TREE python3 benchmarks/results/guard60/lprof_reload.py 200
"""

import gc
import logging
import os
import sys
import tempfile
from pathlib import Path

os.environ["VLLM_TARGET_DEVICE"] = "cpu"
os.environ.setdefault("VLLM_PLUGINS", "derivgraph")

from vllm_integration.tiny_llama import SPECS, checkpoint, cold_start, tiny_llama_vllm  # noqa: E402

os.environ.setdefault("DERIVGRAPH_SPECS", str(SPECS))

import torch  # noqa: E402
from vllm.model_executor.model_loader.reload import inplace  # noqa: E402

from derivgraph.guard import guard, sweep, watch  # noqa: E402
from vllm_integration import completion, guarding, hooks, reload_wrappers, session  # noqa: E402

try:
    from line_profiler import LineProfiler
except ImportError as exc:
    raise SystemExit("needs line-profiler") from exc

n = int(sys.argv[1]) if len(sys.argv) > 1 else 200
logging.basicConfig(level=logging.WARNING)
torch.set_num_threads(1)
prof = LineProfiler()
for fn in (completion.complete, guarding.restore_guard, guard.Guard.restore,
           guard.Guard._plan_watched, guard.Guard._report, watch.Watch.survey, watch.Watch._dirty,
           sweep.Sweep.dirty, sweep.Sweep._dirty_whole, sweep.Sweep._compared,
           sweep.Sweep._verdict, sweep._Gather.differing, session.begin, session.end,
           session._complete, reload_wrappers._LiveLoadWeights.__call__):
    prof.add_function(fn)
with tempfile.TemporaryDirectory() as tmp, tiny_llama_vllm(Path(tmp)) as (mc, vc):
    weights = [checkpoint(0), checkpoint(1)]
    model = cold_start(mc, vc, weights[0], "")
    for key, wrapper in hooks._wrappers.items():
        if "reload_weights" in key or "layerwise" in key:
            prof.add_function(wrapper.__wrapped__ if False else wrapper)
    for i in range(40):
        os.environ["DERIVGRAPH_VLLM_MODE"] = "refill"
        with torch.no_grad():
            inplace.reload_weights(vc, model, iter(weights[i % 2].items()), None, True)
    gc.collect()
    gc.freeze()
    for i in range(n):
        for mode in ("off", "refill"):
            os.environ["DERIVGRAPH_VLLM_MODE"] = mode
            if mode == "refill":
                prof.enable()
            with torch.no_grad():
                inplace.reload_weights(vc, model, iter(weights[i % 2].items()), None, True)
            if mode == "refill":
                prof.disable()
prof.print_stats(output_unit=1e-6, stripzeros=True)
