"""Where the guard's steady restore entry spends its time inside steady reloads (refill after
refill, the tiny vLLM Llama, thread CPU): the library's generated entry re-made from its own
text with a clock read before each step (the key, the lengths, ``suspects()``, the flags and
templates, the startup storage, the report), run as the guard's entry; medians per step over N
reloads. The steps' clock reads (~1 us each) are in the figures; the total is the entry's own.

    PYTHONPATH=. python3 benchmarks/results/vllm68/guard_steps.py [N]
"""
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
n = int(sys.argv[1]) if len(sys.argv) > 1 else 300
torch.set_num_threads(1)
MARKS = {  # a step starts at the first body line starting with this text
    "key": "# the key", "lengths": "if list(map(len", "suspects": "suspects = slots.suspects()",
    "flags": "if suspects:", "storage": "if not storage_kept",
    "report": "report = GuardReport", "end": "return report"}
with tempfile.TemporaryDirectory() as tmp, tiny_llama_vllm(Path(tmp)) as (mc, vc):
    from vllm.model_executor.model_loader.reload import inplace

    from derivgraph.compiler.codegen import Program
    from derivgraph.guard import steady
    from vllm_integration import session
    weights = [checkpoint(0), checkpoint(1)]
    model = cold_start(mc, vc, weights[0], "")
    os.environ["DERIVGRAPH_VLLM_MODE"] = "refill"
    guard = session.state_for(model).guard

    def reload(i):
        with torch.no_grad():
            inplace.reload_weights(vc, model, iter(weights[i % 2].items()), None, True)

    for i in range(30):
        reload(i)
    body = []
    for line in steady._BODY:
        for name, text in MARKS.items():
            if line.startswith(text):
                body.append(f"T.append(('{name}', clock()))")
        body.append(line)
    T: list = []
    build_body, steady._BODY = steady._BODY, body
    made = steady.build(guard)
    steady._BODY = build_body
    made.fn.__globals__.update(T=T, clock=time.thread_time_ns)
    guard._steady = Program(made.name, made.source, made.fn, {}, [])
    rows: dict[str, list[float]] = {}
    whole = []
    for i in range(n):
        T.clear()
        reload(i)
        if [k for k, _ in T] != list(MARKS):  # a fallback (or another path): not counted
            continue
        for (k, a), (_, b) in zip(T, T[1:]):
            rows.setdefault(k, []).append((b - a) / 1e3)
        whole.append((T[-1][1] - T[0][1]) / 1e3)
    print(f"load {os.getloadavg()[0]:.2f}; {len(whole)} of {n} reloads ran the whole entry "
          f"(us, medians; q25)")
    for k, v in rows.items():
        print(f"  {k:10s} {statistics.median(v):7.1f} {statistics.quantiles(v, n=4)[0]:7.1f}")
    print(f"  {'all':10s} {statistics.median(whole):7.1f}")
