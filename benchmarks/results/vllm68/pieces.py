"""Where the plugin's time goes in a steady reload (``refill`` after ``refill``) on the tiny vLLM
Llama: thread CPU time of the plugin's entry points, per reload (calls summed), medians over
N reloads after WARM; and the whole reload of ``off`` after ``off`` and ``refill`` after
``refill`` (blocks of 5, the first of each dropped, arms alternated) for the total.

    PYTHONPATH=. python3 benchmarks/results/vllm68/pieces.py [N] [WARM] [coarse]

``coarse``: only ``complete``, ``plan.refill`` and ``guard.restore`` timed (no nested probes
inside ``complete`` but those two: each probe costs ~2 us of clock reads and a frame).
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
warm = int(sys.argv[2]) if len(sys.argv) > 2 else 30
now = time.thread_time_ns
torch.set_num_threads(1)
acc: dict[str, int] = {}


def probe(owner, name, label):
    fn = getattr(owner, name)

    def timed(*a, **k):
        start = now()
        try:
            return fn(*a, **k)
        finally:
            acc[label] = acc.get(label, 0) + now() - start
    setattr(owner, name, timed)


with tempfile.TemporaryDirectory() as tmp, tiny_llama_vllm(Path(tmp)) as (mc, vc):
    from vllm.model_executor.model_loader.reload import inplace

    from derivgraph.guard import Guard
    from derivgraph.runtime.plan import Plan
    from vllm_integration import completion, session
    weights = [checkpoint(0), checkpoint(1)]
    model = cold_start(mc, vc, weights[0], "")
    coarse = len(sys.argv) > 3 and sys.argv[3] == "coarse"
    probe(session, "begin", "session.begin (all)")
    probe(session, "end", "session.end (all, incl. complete)")
    probe(session, "note_names", "session.note_names")
    probe(session, "witness_note", "session.witness_note")
    probe(session, "recording", "session.recording")
    probe(session, "complete", "completion.complete")
    if not coarse:
        probe(completion, "_run_plan", "complete: _run_plan")
        probe(completion, "restore_guard", "complete: restore_guard")
        probe(completion, "check_folds", "complete: check_folds")
        probe(completion, "verify_specs_enabled", "complete: verify_specs_enabled")
        probe(completion, "_anything", "complete: _anything")
    probe(Plan, "refill", "plan.refill")
    probe(Guard, "restore", "guard.restore")
    rows: dict[str, list[float]] = {}
    whole: dict[str, list[float]] = {"off": [], "refill": []}

    def reload(i, mode):
        os.environ["DERIVGRAPH_VLLM_MODE"] = mode
        acc.clear()
        start = now()
        with torch.no_grad():
            inplace.reload_weights(vc, model, iter(weights[i % 2].items()), None, True)
        return now() - start

    for i in range(warm):
        reload(i, "refill")
    import gc
    gc.collect()
    gc.freeze()
    i = 0
    while len(whole["refill"]) < n:
        for mode in ("off", "refill") if (i // 5) % 2 == 0 else ("refill", "off"):
            for j in range(5):
                t = reload(i, mode)
                i += 1
                if j == 0:
                    continue
                whole[mode].append(t / 1e3)
                if mode == "refill":
                    for k, v in acc.items():
                        rows.setdefault(k, []).append(v / 1e3)
    med = {k: statistics.median(v) for k, v in rows.items()}
    print(f"load {os.getloadavg()[0]:.2f}; n {n} refill reloads after refill (us, medians)")
    for k, v in med.items():
        print(f"  {k:40s} {v:8.1f}")
    c = [a - b - g for a, b, g in zip(rows["completion.complete"], rows["plan.refill"],
                                      rows["guard.restore"])]
    print(f"  {'complete - refill - restore':40s} {statistics.median(c):8.1f}")
    e = [a - b for a, b in zip(rows["session.end (all, incl. complete)"], rows["completion.complete"])]
    print(f"  {'end - complete':40s} {statistics.median(e):8.1f}")
    off, on = statistics.median(whole["off"]), statistics.median(whole["refill"])
    print(f"whole reload: off {off:.1f} refill {on:.1f} delta {on - off:.1f}"
          f" (q25 {statistics.quantiles(whole['off'], n=4)[0]:.1f} /"
          f" {statistics.quantiles(whole['refill'], n=4)[0]:.1f})")
