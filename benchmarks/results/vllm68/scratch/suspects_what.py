"""Scratch: the guard's steady suspects on the tiny Llama: which differ each reload, their
value kinds and templates, and harmless()'s time per kind (warm)."""
import os, sys, tempfile, time, statistics, types, functools
from pathlib import Path
os.environ["VLLM_TARGET_DEVICE"] = "cpu"
os.environ.setdefault("VLLM_PLUGINS", "derivgraph")
import torch
torch.set_num_threads(1)
from vllm_integration.tiny_llama import SPECS, checkpoint, cold_start, tiny_llama_vllm
os.environ.setdefault("DERIVGRAPH_SPECS", str(SPECS))
with tempfile.TemporaryDirectory() as tmp, tiny_llama_vllm(Path(tmp)) as (mc, vc):
    from vllm.model_executor.model_loader.reload import inplace
    from vllm_integration import session
    from derivgraph.guard.template import harmless, ATOM
    from derivgraph.guard.holders import MISSING
    weights = [checkpoint(0), checkpoint(1)]
    model = cold_start(mc, vc, weights[0], "")
    os.environ["DERIVGRAPH_VLLM_MODE"] = "refill"
    guard = session.state_for(model).guard
    for i in range(30):
        with torch.no_grad():
            inplace.reload_weights(vc, model, iter(weights[i % 2].items()), None, True)
    sweep = guard.watch.sweep; g = sweep.gathers[sweep.whole]
    last, dicts, keys, values = g.columns
    print("suspects", len(last), "always", len(g.slots._always))
    for i, (d, k, v) in enumerate(zip(dicts, keys, values)):
        now = d.get(k, MISSING)
        if now is v:
            continue
        t = sweep.acc_templates[g.acc[last[i]]]
        kind = type(now).__name__
        extra = ""
        if type(now) is types.FunctionType:
            extra = f"code {now.__code__.co_name} closure {now.__closure__ is not None} defaults {now.__defaults__ is not None}"
        elif type(now) is types.MethodType:
            extra = f"method {now.__func__.__name__}"
        ts = []
        for _ in range(2000):
            a = time.perf_counter_ns(); harmless(t, now); ts.append(time.perf_counter_ns() - a)
        print(f"{k!r:28} {kind:14} template {'ATOM' if t is ATOM else type(t).__name__:8} harmless {harmless(t, now)} {statistics.median(ts)/1e3:.2f}us {extra}")
