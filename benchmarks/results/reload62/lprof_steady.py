"""Line profile of the plugin's completion on the tiny vLLM Llama in the steady state (plugin
reloads back to back, refill mode), the refill's and the guard's functions.

    PATH=/work/venv/bin:$PATH PYTHONPATH=$TREE \
        python3 benchmarks/results/reload62/lprof_steady.py 300
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

from derivgraph import dict_slots  # noqa: E402
from derivgraph.guard import guard, sweep  # noqa: E402
from derivgraph.runtime import engine, holders, plan, storage  # noqa: E402
from vllm_integration import completion  # noqa: E402

try:
    from line_profiler import LineProfiler
except ImportError as exc:
    raise SystemExit("needs line-profiler") from exc

n = int(sys.argv[1]) if len(sys.argv) > 1 else 300
logging.basicConfig(level=logging.WARNING)
torch.set_num_threads(1)
prof = LineProfiler()
for fn in (completion.complete, plan.Plan.run, plan.Plan._take_batched, engine.RefillTable.take,
           holders.Holders.sources_intact, holders.Holders._at_addresses,
           holders.Holders.owners_current, holders.Holders.rebind, holders.Holders._rebind_stale,
           holders.Holders.moved, storage.BoundTensors.staged_if_changed, plan.Plan._set_scalars,
           guard.Guard.restore, guard.Guard._plan_watched, sweep.Sweep._compared,
           sweep.Sweep._verdict, sweep._Gather.differing, dict_slots.DictSlots.suspects):
    prof.add_function(fn)
with tempfile.TemporaryDirectory() as tmp, tiny_llama_vllm(Path(tmp)) as (mc, vc):
    weights = [checkpoint(0), checkpoint(1)]
    model = cold_start(mc, vc, weights[0], "")
    os.environ["DERIVGRAPH_VLLM_MODE"] = "refill"
    for i in range(20):
        with torch.no_grad():
            inplace.reload_weights(vc, model, iter(weights[i % 2].items()), None, True)
    gc.collect()
    gc.freeze()
    prof.enable()
    for i in range(n):
        with torch.no_grad():
            inplace.reload_weights(vc, model, iter(weights[i % 2].items()), None, True)
    prof.disable()
prof.print_stats(output_unit=1e-6, stripzeros=True)
