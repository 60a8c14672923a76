"""Issue 20.5, hypothesis 1's other half: how much of a full (gen-2) collection the plugin's
long-lived objects are, on the tiny vLLM Llama after 30 refill reloads, nothing frozen.

    PYTHONPATH=. python3 benchmarks/results/slow69/gc_share.py [N]

Counts the gc-tracked objects in the process and those reachable from the model's derivgraph
state (``session.state_for(model)``: the plan, the guard, their tables) without passing through
the model's modules, parameters or tensors (those are vLLM's and would be there without the
plugin), classes, or any module's namespace (functions' globals), and times ``gc.collect()``
N times (thread CPU, median). A full collection's cost is roughly linear in the tracked
objects it scans, so the plugin's share of it is about its share of the objects. vLLM freezes
its start-up objects (``gc.freeze()``), after which neither is scanned.
"""
from __future__ import annotations

import gc
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ["VLLM_TARGET_DEVICE"] = "cpu"
os.environ.setdefault("VLLM_PLUGINS", "derivgraph")
import torch  # noqa: E402

from vllm_integration.tiny_llama import SPECS, checkpoint, cold_start, tiny_llama_vllm  # noqa: E402

os.environ.setdefault("DERIVGRAPH_SPECS", str(SPECS))
N = int(sys.argv[1]) if len(sys.argv) > 1 else 20
torch.set_num_threads(1)

with tempfile.TemporaryDirectory() as tmp, tiny_llama_vllm(Path(tmp)) as (mc, vc):
    from vllm.model_executor.model_loader.reload import inplace

    from vllm_integration import session
    weights = [checkpoint(0), checkpoint(1)]
    model = cold_start(mc, vc, weights[0], "")
    os.environ["DERIVGRAPH_VLLM_MODE"] = "refill"
    for i in range(30):
        with torch.no_grad():
            inplace.reload_weights(vc, model, iter(weights[i % 2].items()), None, True)
    state = session.state_for(model)
    assert state is not None

    # vLLM's side, not counted as the plugin's: the model's modules, their dicts, the tensors
    stop = {id(m) for m in model.modules()}
    stop |= {id(m.__dict__) for m in model.modules()}
    stop |= {id(t) for t in model.parameters()} | {id(t) for t in model.buffers()}
    # and no module's namespace (a function's ``__globals__`` would reach the whole program)
    stop |= {id(vars(m)) for m in list(sys.modules.values()) if m is not None}
    seen: set[int] = set()
    todo = [state]
    tracked = 0
    while todo:
        obj = todo.pop()
        if id(obj) in seen or id(obj) in stop or isinstance(obj, (type, type(sys))):
            continue
        seen.add(id(obj))
        if gc.is_tracked(obj):
            tracked += 1
        todo.extend(gc.get_referents(obj))
    gc.collect()
    total = len(gc.get_objects())
    times = []
    for _ in range(N):
        start = time.thread_time_ns()
        gc.collect()
        times.append((time.thread_time_ns() - start) / 1e6)
    print(f"load {os.getloadavg()[0]:.2f}; gc-tracked objects in the process: {total}")
    print(f"tracked objects reachable from the model's derivgraph state (not through the model's"
          f" modules or tensors): {tracked} ({100 * tracked / total:.1f} %)")
    print(f"gc.collect() (full, nothing frozen): median {statistics.median(times):.1f} ms of {N};"
          f" the plugin's share by count ~{statistics.median(times) * tracked / total:.2f} ms")
