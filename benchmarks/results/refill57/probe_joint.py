"""In situ, one process: the plan's two pre-run address checks (the source check's and
``restore_storage``'s) with the joint check (this tree) and without it (``Holders.startup``
set to None for that reload: the separate checks, main's code path), alternating per reload
on the tiny vLLM Llama in refill mode, each timed with the thread's CPU clock right after
vLLM's reload (cold). Prints min / q25 / median of ``sources_intact + restore_storage`` per
arm, and of each alone.

    PYTHONPATH=$TREE python3 benchmarks/results/refill57/probe_joint.py [reloads]
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

reloads = int(sys.argv[1]) if len(sys.argv) > 1 else 300
logging.basicConfig(level=logging.ERROR)
torch.set_num_threads(1)
clock = time.thread_time_ns
with tempfile.TemporaryDirectory() as tmp, tiny_llama_vllm(Path(tmp)) as (mc, vc):
    weights = [checkpoint(0), checkpoint(1)]
    model = cold_start(mc, vc, weights[0], "")
    os.environ["DERIVGRAPH_VLLM_MODE"] = "refill"
    plan = session.state_for(model).plan
    holders, tensors = plan.holders, plan.tensors
    joined = holders.startup
    times = {arm: {"sources_intact": [], "restore_storage": []} for arm in ("joint", "separate")}
    arm = "joint"
    check = holders.sources_intact
    restore = plan.bindings["restore_storage"]
    seen = {"check": 0}

    def timed_check(report=None):  # noqa: ANN001, ANN202
        t = clock()
        out = check(report)
        dt = clock() - t
        if report is not None and seen["check"] == 0:  # the run's check, not moved()'s
            times[arm]["sources_intact"].append(dt)
            seen["check"] = 1
        return out

    def timed_restore():  # noqa: ANN202
        t = clock()
        out = restore()
        times[arm]["restore_storage"].append(clock() - t)
        return out

    holders.sources_intact = timed_check
    plan.bindings["restore_storage"] = timed_restore
    gc.collect()
    gc.freeze()
    for i in range(reloads + 10):
        arm = "joint" if i % 2 == 0 else "separate"
        holders.startup = joined if arm == "joint" else None
        seen["check"] = 0
        with torch.no_grad():
            inplace.reload_weights(vc, model, iter(weights[i % 2 ^ (i // 2) % 2].items()),
                                   None, True)
    holders.startup = joined
    for arm, parts in times.items():
        both = [a + b for a, b in zip(parts["sources_intact"][5:], parts["restore_storage"][5:])]
        for name, values in (("sum", both), *((k, v[5:]) for k, v in parts.items())):
            values = sorted(values)
            print(f"{arm:9s} {name:16s} min {values[0] / 1e3:6.1f}  q25 "
                  f"{values[len(values) // 4] / 1e3:6.1f}  median "
                  f"{statistics.median(values) / 1e3:6.1f} us  ({len(values)} reloads)")
