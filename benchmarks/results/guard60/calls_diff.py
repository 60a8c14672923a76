"""Every Python-level call one plugin reload adds to vLLM's ``reload_weights`` on the tiny Llama
(refill mode) against ``off``: cProfile call counts of N reloads of each arm, diffed per function.

    PATH=/work/venv/bin:$PATH PYTHONPATH=$TREE python3 benchmarks/results/guard60/calls_diff.py 20
"""

import cProfile
import gc
import logging
import os
import pstats
import sys
import tempfile
from pathlib import Path

os.environ["VLLM_TARGET_DEVICE"] = "cpu"
os.environ.setdefault("VLLM_PLUGINS", "derivgraph")

from vllm_integration.tiny_llama import SPECS, checkpoint, cold_start, tiny_llama_vllm  # noqa: E402

os.environ.setdefault("DERIVGRAPH_SPECS", str(SPECS))

import torch  # noqa: E402
from vllm.model_executor.model_loader.reload import inplace  # noqa: E402

n = int(sys.argv[1]) if len(sys.argv) > 1 else 20
logging.basicConfig(level=logging.WARNING)
torch.set_num_threads(1)
with tempfile.TemporaryDirectory() as tmp, tiny_llama_vllm(Path(tmp)) as (mc, vc):
    weights = [checkpoint(0), checkpoint(1)]
    model = cold_start(mc, vc, weights[0], "")
    counts = {}
    for i in range(40):  # past the guard's re-proofs of the tables vLLM replaces (MAX_PROVES)
        os.environ["DERIVGRAPH_VLLM_MODE"] = "refill"
        with torch.no_grad():
            inplace.reload_weights(vc, model, iter(weights[i % 2].items()), None, True)
    for mode in ("off", "refill"):
        os.environ["DERIVGRAPH_VLLM_MODE"] = mode
        gc.collect()
        prof = cProfile.Profile()
        for i in range(n):
            items = iter(weights[i % 2].items())
            prof.enable()
            with torch.no_grad():
                inplace.reload_weights(vc, model, items, None, True)
            prof.disable()
        st = pstats.Stats(prof).stats
        c = counts[mode] = {}
        for (f, line, name), (cc, nc, tt, ct, callers) in st.items():
            key = f"{f.split('site-packages/')[-1].split('guard60/')[-1]}:{line}({name})"
            c[key] = nc / n
    off, on = counts["off"], counts["refill"]
    rows = sorted(((on.get(k, 0) - off.get(k, 0)), k) for k in set(on) | set(off))
    total = 0.0
    for d, k in rows:
        if abs(d) >= 0.5:
            total += d
            print(f"{d:8.1f}  {k}")
    print(f"calls added per reload: {total:.0f} (off {sum(off.values()):.0f}, plugin {sum(on.values()):.0f})")
