"""In-process A/B of the guard's steady entry on the tiny vLLM Llama (refill after refill,
thread CPU): A = the lengths by ``map(len)`` then ``suspects()`` (the base's body, with a proof
sizing nothing), B = ``suspects()`` reading the lengths with the tables' heads (this branch).
Both entries are built from the library's own text (``steady._BODY``; A with B's two lines put
back as they were) with a clock read at the checks' start, after them and at the end; the
arms alternate reload by reload (A B B A ...), sharing the settled proof's item words (a
shallow copy of the gather's ``DictSlots`` without the lengths for A). Medians per arm and how
many pairs B beat A; also each whole reload's thread time per arm.

    PYTHONPATH=. python3 benchmarks/results/vllm68b/lengths_ab.py [PAIRS]
"""
import copy
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
pairs = int(sys.argv[1]) if len(sys.argv) > 1 else 150
torch.set_num_threads(1)
MARKS = {"checks": "# Sweep._dirty_whole", "flags": "if suspects:", "end": "return report"}
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
    sweep = guard.watch.sweep
    gather = sweep.gathers[sweep.whole]
    slots_b = gather.slots
    slots_a = copy.copy(slots_b)  # the same item words; heads without the lengths
    cut = slots_b._tables_words
    slots_a._heads = slots_b._heads[:cut].copy()
    slots_a._heads_were = slots_b._heads_were[:cut].copy()
    slots_a._heads_bytes = slots_a._heads_were.tobytes()
    slots_a._len_sized = []
    new = steady._BODY
    at = new.index("suspects = slots.suspects()")
    assert new[at + 1] == "if slots.resized:"
    old = new[:at] + ["if list(map(len, gather_dicts)) != lengths:", new[at + 2],
                      "suspects = slots.suspects()"] + new[at + 3:]
    T: list = []
    made = {}
    for arm, body, slots in (("A", old, slots_a), ("B", new, slots_b)):
        marked = []
        for line in body:
            marked += [f"T.append(('{k}', clock()))" for k, t in MARKS.items()
                       if line.startswith(t)]
            marked.append(line)
        steady._BODY = marked
        gather.slots = slots
        p = steady.build(guard)
        p.fn.__globals__.update(T=T, clock=time.thread_time_ns)
        made[arm] = (Program(p.name, p.source, p.fn, {}, []), slots)
    steady._BODY = new
    rows = {a: {"checks": [], "whole": [], "reload": []} for a in "AB"}
    fell = {"A": 0, "B": 0}
    order = []
    for i in range(pairs):
        order += ["A", "B"] if i % 2 == 0 else ["B", "A"]
    for i, arm in enumerate(order):
        guard._steady, gather.slots = made[arm]
        T.clear()
        start = time.thread_time_ns()
        reload(i)
        rows[arm]["reload"].append((time.thread_time_ns() - start) / 1e3)
        if [k for k, _ in T] != list(MARKS):
            fell[arm] += 1
            rows[arm]["checks"].append(None)
            continue
        t = dict(T)
        rows[arm]["checks"].append((t["flags"] - t["checks"]) / 1e3)
        rows[arm]["whole"].append((t["end"] - t["checks"]) / 1e3)
    print(f"load {os.getloadavg()[0]:.2f}; {pairs} pairs; fallbacks {fell}")
    for k in ("checks", "whole", "reload"):
        a = [x for x in rows["A"][k] if x is not None]
        b = [x for x in rows["B"][k] if x is not None]
        print(f"  {k:7s} A {statistics.median(a):6.1f} (q25 {statistics.quantiles(a, n=4)[0]:5.1f})"
              f"  B {statistics.median(b):6.1f} (q25 {statistics.quantiles(b, n=4)[0]:5.1f})")
    ca, cb = rows["A"]["checks"], rows["B"]["checks"]
    won = [b < a for a, b in zip(ca, cb) if a is not None and b is not None]
    print(f"  checks (lengths + suspects): B below A in {sum(won)} of {len(won)} pairs")
    won = [b < a for a, b in zip(rows["A"]["reload"], rows["B"]["reload"])]
    print(f"  whole reload (vLLM's and the plugin's): B below A in {sum(won)} of {len(won)} pairs")
