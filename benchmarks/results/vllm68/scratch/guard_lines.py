"""Scratch: the guard's steady entry called in a loop (warm caches) vs inside reloads (thread
CPU); and its pieces timed warm: how much of the in-reload time is cold memory."""
import os, sys, tempfile, time, statistics
from pathlib import Path
os.environ["VLLM_TARGET_DEVICE"] = "cpu"
os.environ.setdefault("VLLM_PLUGINS", "derivgraph")
import torch
torch.set_num_threads(1)
from vllm_integration.tiny_llama import SPECS, checkpoint, cold_start, tiny_llama_vllm
os.environ.setdefault("DERIVGRAPH_SPECS", str(SPECS))
now = time.thread_time_ns
with tempfile.TemporaryDirectory() as tmp, tiny_llama_vllm(Path(tmp)) as (mc, vc):
    from vllm.model_executor.model_loader.reload import inplace
    from vllm_integration import session
    weights = [checkpoint(0), checkpoint(1)]
    model = cold_start(mc, vc, weights[0], "")
    os.environ["DERIVGRAPH_VLLM_MODE"] = "refill"
    st = session.state_for(model)
    guard, plan = st.guard, st.plan
    for i in range(30):
        with torch.no_grad():
            inplace.reload_weights(vc, model, iter(weights[i % 2].items()), None, True)
    fn = guard._steady.fn
    sweep = guard.watch.sweep; g = sweep.gathers[sweep.whole]
    print("dicts", len(g.dicts), "suspects", len(g.columns[0]), "startup", len(guard.startup), "guarded", len(guard._guarded))
    for kept in (True, False):
        ts = []
        for _ in range(2000):
            a = now(); fn(model, storage_kept=kept); ts.append(now() - a)
        print("warm loop storage_kept", kept, "median us", statistics.median(ts) / 1e3)
    slots = g.slots
    def t(f, n=2000):
        ts = []
        for _ in range(n):
            a = now(); f(); ts.append(now() - a)
        return statistics.median(ts) / 1e3
    print("suspects()", t(slots.suspects))
    print("map len", t(lambda: list(map(len, g.dicts)) != g.lengths))
    print("at.intact", t(guard._at.intact))
    from derivgraph.guard.report import GuardReport
    print("report", t(lambda: GuardReport(guarded=list(guard._guarded), weights=3)))
