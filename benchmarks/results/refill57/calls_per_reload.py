"""The Python functions the plugin's refill runs per reload on the tiny vLLM Llama (refill
mode, ``plan.refill(verify=True)`` right after vLLM's reload), counted with ``sys.setprofile``
over one reload after warm-up: each Python function called and each C function it calls, in
call order (an inventory of what a reload touches, not a timing).

    PYTHONPATH=$TREE python3 benchmarks/results/refill57/calls_per_reload.py
"""

import collections
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

from vllm_integration import session  # noqa: E402

logging.basicConfig(level=logging.ERROR)
with tempfile.TemporaryDirectory() as tmp, tiny_llama_vllm(Path(tmp)) as (mc, vc):
    weights = [checkpoint(0), checkpoint(1)]
    model = cold_start(mc, vc, weights[0], "")
    os.environ["DERIVGRAPH_VLLM_MODE"] = "refill"
    plan = session.state_for(model).plan
    refill = plan.refill
    calls: list[str] = []

    def traced(**kwargs):  # noqa: ANN003, ANN202
        def hook(frame, event, arg):  # noqa: ANN001, ANN202
            if event == "call":
                code = frame.f_code
                calls.append(f"py  {Path(code.co_filename).name}:{code.co_name}")
            elif event == "c_call":
                calls.append(f"c   {getattr(arg, '__qualname__', arg)}")
        sys.setprofile(hook)
        try:
            return refill(**kwargs)
        finally:
            sys.setprofile(None)

    for i in range(6):
        calls.clear()
        plan.refill = traced
        with torch.no_grad():
            inplace.reload_weights(vc, model, iter(weights[i % 2].items()), None, True)
        plan.refill = refill
    counts = collections.Counter(calls)
    py = sum(v for k, v in counts.items() if k.startswith("py"))
    print(f"one reload's plan.refill(verify=True): {py} Python calls, "
          f"{len(calls) - py} C calls")
    for line in calls:
        print(line)
