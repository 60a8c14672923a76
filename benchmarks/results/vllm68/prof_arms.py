"""Where a steady plugin reload's extra time goes: cProfile of N ``refill`` reloads that follow
a ``refill`` reload, and of N ``off`` reloads that follow an ``off`` one (the judged
transitions), on the tiny vLLM Llama after WARM reloads of each; prints per function the
tottime per reload (us) in each arm and their difference, sorted by the difference.
cProfile's own cost inflates every Python call: read the ranking, not the microseconds.

    PYTHONPATH=. python3 benchmarks/results/vllm68/prof_arms.py [N] [LINES] [WARM]
"""
import cProfile
import os
import pstats
import sys
import tempfile
from pathlib import Path

os.environ["VLLM_TARGET_DEVICE"] = "cpu"
os.environ.setdefault("VLLM_PLUGINS", "derivgraph")
import torch  # noqa: E402

from vllm_integration.tiny_llama import SPECS, checkpoint, cold_start, tiny_llama_vllm  # noqa: E402

os.environ.setdefault("DERIVGRAPH_SPECS", str(SPECS))
n = int(sys.argv[1]) if len(sys.argv) > 1 else 200
lines = int(sys.argv[2]) if len(sys.argv) > 2 else 50
warm = int(sys.argv[3]) if len(sys.argv) > 3 else 20
torch.set_num_threads(1)
with tempfile.TemporaryDirectory() as tmp, tiny_llama_vllm(Path(tmp)) as (mc, vc):
    from vllm.model_executor.model_loader.reload import inplace
    weights = [checkpoint(0), checkpoint(1)]
    model = cold_start(mc, vc, weights[0], "")

    def reload(i, mode):
        os.environ["DERIVGRAPH_VLLM_MODE"] = mode
        with torch.no_grad():
            inplace.reload_weights(vc, model, iter(weights[i % 2].items()), None, True)

    stats = {}
    for mode in ("off", "refill"):
        for i in range(warm):
            reload(i, mode)
        prof = cProfile.Profile()
        for i in range(n):
            reload(i, mode)  # dropped: a transition only once per block
            prof.enable()
            reload(i + 1, mode)
            prof.disable()
        stats[mode] = pstats.Stats(prof).stats
    keys = set(stats["off"]) | set(stats["refill"])

    def tt(mode, k):
        v = stats[mode].get(k)
        return (v[2] / n * 1e6, v[1] / n) if v else (0.0, 0)
    rows = []
    for k in keys:
        (a, ca), (b, cb) = tt("off", k), tt("refill", k)
        rows.append((b - a, a, b, ca, cb, k))
    rows.sort(reverse=True)
    tot = {m: sum(v[2] for v in stats[m].values()) / n * 1e6 for m in stats}
    print(f"total per reload (us, under cProfile): off {tot['off']:.1f} refill {tot['refill']:.1f}")
    print(f"{'delta':>8} {'off':>8} {'refill':>8} {'calls o/r':>11}  function")
    for d, a, b, ca, cb, (f, ln, name) in rows[:lines]:
        print(f"{d:8.1f} {a:8.1f} {b:8.1f} {ca:5.0f}/{cb:<5.0f}  {name} {f.split('/wt/vllm68/')[-1].split('site-packages/')[-1]}:{ln}")
