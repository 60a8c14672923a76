"""The plugin's refill and guard restore right after vLLM's reload (cold) against the same
calls repeated at once (warm, the plan's and guard's memory and code in cache), per reload on
the tiny vLLM Llama, refill mode. The second warm call finds nothing rebuilt.

    PYTHONPATH=$PWD python3 benchmarks/results/reload54/cold_warm.py [reloads]
"""

import gc
import logging
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ["VLLM_TARGET_DEVICE"] = "cpu"
os.environ.setdefault("VLLM_PLUGINS", "derivgraph")

from vllm_integration.tiny_llama import SPECS, checkpoint, cold_start, tiny_llama_vllm  # noqa: E402

os.environ.setdefault("DERIVGRAPH_SPECS", str(SPECS))

import torch  # noqa: E402
from vllm.model_executor.model_loader.reload import inplace  # noqa: E402

from vllm_integration import session  # noqa: E402

reloads = int(sys.argv[1]) if len(sys.argv) > 1 else 150
logging.basicConfig(level=logging.ERROR)
torch.set_num_threads(1)
clock = time.perf_counter_ns
with tempfile.TemporaryDirectory() as tmp, tiny_llama_vllm(Path(tmp)) as (mc, vc):
    weights = [checkpoint(0), checkpoint(1)]
    model = cold_start(mc, vc, weights[0], "")
    os.environ["DERIVGRAPH_VLLM_MODE"] = "refill"
    state = session.state_for(model)
    plan, guard = state.plan, state.guard
    times: dict[str, list[int]] = {k: [] for k in ("cold refill", "cold guard restore",
                                                   "warm refill", "warm guard restore")}
    refill, restore = plan.refill, guard.restore

    def timed_refill(**kwargs):  # noqa: ANN003, ANN202
        t = clock()
        out = refill(**kwargs)
        times["cold refill"].append(clock() - t)
        return out

    def timed_restore(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        t = clock()
        out = restore(*args, **kwargs)
        times["cold guard restore"].append(clock() - t)
        return out

    plan.refill, guard.restore = timed_refill, timed_restore
    gc.collect()
    gc.freeze()
    for i in range(reloads):
        with torch.no_grad():
            inplace.reload_weights(vc, model, iter(weights[i % 2].items()), None, True)
            t = clock()
            refill(verify=True)
            times["warm refill"].append(clock() - t)
            t = clock()
            restore(model, strict=False, declared=plan.declared_storages())
            times["warm guard restore"].append(clock() - t)
    for name, values in times.items():
        values = values[10:]
        print(f"{name:20s} min {min(values) / 1e3:7.1f} us  median "
              f"{statistics.median(values) / 1e3:7.1f} us  ({len(values)} reloads)")
