"""Does each distinct Python function the plugin touches after vLLM's reload cost microseconds
cold? In situ on the tiny vLLM Llama (refill mode, each plugin reload after an ``off`` one), the
completion is timed (thread CPU clock) with K extra distinct no-op-like functions called at its
end on alternate reloads, against none.

    PATH=/work/venv/bin:$PATH PYTHONPATH=$TREE python3 benchmarks/results/guard60/cold_functions.py 200 20
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

n = int(sys.argv[1]) if len(sys.argv) > 1 else 200
k = int(sys.argv[2]) if len(sys.argv) > 2 else 20
source = "\n".join(
    f"def f{i}(a, b):\n    c = a + {i}\n    d = (b, c, {i})\n    if c > {i + 1000}:\n"
    f"        return d\n    return len(d) + c\n" for i in range(k))
space: dict = {}
exec(compile(source, "<dummies>", "exec"), space)
dummies = [space[f"f{i}"] for i in range(k)]
logging.basicConfig(level=logging.WARNING)
torch.set_num_threads(1)
now = time.thread_time_ns
times: dict[bool, list[float]] = {False: [], True: []}
extra = [False]
complete = session._complete


def timed(*a, **kw):
    start = now()
    try:
        return complete(*a, **kw)
    finally:
        if extra[0]:
            for f in dummies:
                f(1, 2)
        times[extra[0]].append((now() - start) / 1e3)


session._complete = timed
with tempfile.TemporaryDirectory() as tmp, tiny_llama_vllm(Path(tmp)) as (mc, vc):
    weights = [checkpoint(0), checkpoint(1)]
    model = cold_start(mc, vc, weights[0], "")
    for i in range(40):
        os.environ["DERIVGRAPH_VLLM_MODE"] = "refill"
        inplace.reload_weights(vc, model, iter(weights[i % 2].items()), None, True)
    for v in times.values():
        v.clear()
    gc.collect()
    gc.freeze()
    for i in range(2 * n):
        for mode in ("off", "refill"):
            os.environ["DERIVGRAPH_VLLM_MODE"] = mode
            extra[0] = bool(i % 2)
            with torch.no_grad():
                inplace.reload_weights(vc, model, iter(weights[(i // 2) % 2].items()), None, True)
for key, label in ((False, "complete"), (True, f"complete + {k} functions")):
    v = times[key]
    print(f"{label:28s} min {min(v):7.1f} q25 {statistics.quantiles(v, n=4)[0]:7.1f} "
          f"median {statistics.median(v):7.1f} us (n {len(v)})")
