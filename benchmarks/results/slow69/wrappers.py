"""Issue 20.5, hypothesis 2: what the plugin's wrappers on vLLM's path cost per reload, warm.

    PYTHONPATH=. python3 benchmarks/results/slow69/wrappers.py [N]

The tiny vLLM Llama loaded with the plugin. Per reload (checkpoint format) the plugin's code on
vLLM's path outside the session's entry points is: the ``reload_weights``,
``initialize_layerwise_reload`` and ``finalize_layerwise_reload`` wrappers and the model's
``_LiveLoadWeights`` (once each: an ``active()`` read and a call), and the ``_recording``
generator that every weight passes through (per weight: a resume, an ``append``, the fold
witness's ``note`` where the model has fold sources). This times, interleaved, N times each
(thread CPU, medians, us): iterating the checkpoint's items bare; through ``_recording`` with the
witness (as the plugin's reload does); the witness's ``note`` calls alone; and ``active()``.
It also counts the weights and the calls of each hook in one real reload.
"""
from __future__ import annotations

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
N = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
now = time.thread_time_ns
torch.set_num_threads(1)

with tempfile.TemporaryDirectory() as tmp, tiny_llama_vllm(Path(tmp)) as (mc, vc):
    from vllm.model_executor.model_loader.reload import inplace

    from vllm_integration import hook_state, reload_wrappers, session
    weights = [checkpoint(0), checkpoint(1)]
    model = cold_start(mc, vc, weights[0], "")
    os.environ["DERIVGRAPH_VLLM_MODE"] = "refill"
    for i in range(10):
        with torch.no_grad():
            inplace.reload_weights(vc, model, iter(weights[i % 2].items()), None, True)

    calls: dict[str, int] = {}
    items = list(weights[0].items())
    note = session.witness_note(model)

    def count(name: str, fn):
        def counted(*a, **k):
            calls[name] = calls.get(name, 0) + 1
            return fn(*a, **k)
        return counted

    saved = {n: getattr(session, n) for n in ("begin", "end", "note_names", "witness_note")}
    for n, fn in saved.items():
        setattr(session, n, count(n, fn))
    saved_active = reload_wrappers.active
    reload_wrappers.active = count("active (reload_wrappers)", saved_active)
    with torch.no_grad():
        inplace.reload_weights(vc, model, iter(weights[1].items()), None, True)
    for n, fn in saved.items():
        setattr(session, n, fn)
    reload_wrappers.active = saved_active

    def bare() -> None:
        for _ in iter(items):
            pass

    def recording() -> None:
        for _ in reload_wrappers._recording(iter(items), [], model):
            pass

    def notes() -> None:
        if note is not None:
            for name, tensor in items:
                note(name, tensor)

    def actives() -> None:
        hook_state.active()

    arms = {"bare": bare, "recording": recording, "notes": notes, "active": actives}
    times: dict[str, list[float]] = {k: [] for k in arms}
    for i in range(N):
        order = list(arms) if i % 2 == 0 else list(arms)[::-1]
        for k in order:
            start = now()
            arms[k]()
            times[k].append((now() - start) / 1e3)
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"load {os.getloadavg()[0]:.2f}; N {N}; weights per reload {len(items)};"
          f" witness note {'present' if note is not None else 'absent'}")
    print(f"calls in one refill reload: {calls}")
    for k, v in med.items():
        print(f"  {k:10s} {v:7.2f} us (median)")
    # with no witness, ``notes`` is an empty call: the clock reads' floor
    floor = med["notes"] if note is None else 0.0
    print(f"  recording - bare - (notes if a witness) = "
          f"{med['recording'] - med['bare'] - (0.0 if note is None else med['notes']):.2f} us"
          " (the generator's own cost per reload, warm)")
    if note is None:
        print(f"  active - floor ({floor:.2f}) = {med['active'] - floor:.2f} us per call")
