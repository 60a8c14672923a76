"""Issue 20.5: is vLLM's own reload work slower beside the plugin, and why? (thread CPU, in process)

    PYTHONPATH=. python3 benchmarks/results/slow69/vllm_part.py [ROUNDS] [WARM] [OPTION...]

OPTION: ``freeze`` (the default; a placeholder), ``nofreeze``, ``pattern``, ``hooks``,
``unhooked`` (below).

The tiny vLLM Llama, ``reload_weights`` in checkpoint format, as the bench
(``vllm_integration/reload_bench.py``: one torch thread, ``gc.collect(); gc.freeze()`` after the
warm-up unless ``nofreeze``). Each round runs a block of 5 ``off`` reloads and a block of 5
``refill`` reloads (the order alternates each round), so every block's first reload comes after
the other arm: the four transitions ``off>off``, ``refill>refill`` (the judged steady figure),
``refill>off`` (the carry) and ``off>refill`` are all timed. With ``pattern`` (third argument)
a round is instead ``off off off refill refill refill off sweep``: ``sweep`` is an ``off``
reload after an untimed ``add_`` over a 2 MiB tensor (this host's L2 is 512 KiB a core): how much
vLLM's part slows when its data has left the cache, to set beside the carry; pairs are then
per round of the medians of each transition. With ``hooks`` a round is ``off off off refill refill
refill off hooks hooks hooks``: ``hooks`` is the plugin's mode with the completion (refill, guard,
checks) skipped, as the bench's ``--hooks-only`` arm: the hooks and the session scopes alone.
With ``unhooked`` a round is ``off off off refill refill refill off unhooked unhooked unhooked``:
``unhooked`` is ``off`` with every binding the plugin patched swapped back to vLLM's own
function (the bench's ``--unhooked``; the model's live ``load_weights`` stays and forwards):
whether ``off`` is a fair stand-in for vLLM without the hooks.

Per reload it splits the time (``time.thread_time_ns``):
- ``plugin``: inside the session's entry points (``begin``, ``end`` incl. the refill and the guard,
  ``note_names``, ``recording``, ``witness_note``, ``abort``) and the per-weight ``note`` that
  ``witness_note`` hands out; outermost calls only (one probe per call, the same in both arms;
  ``off`` calls none of them);
- ``vllm``: the whole reload less ``plugin``: vLLM's own work plus the hooks' wrapper bodies
  (``active()``, the ``_recording`` generator's frames, ``_LiveLoadWeights``), split by phase:
  ``init`` (``initialize_layerwise_reload``), ``load`` (the model's ``load_weights``, where the
  weights iterator and its per-weight wrappers run), ``final`` (``finalize_layerwise_reload``),
  and ``rest`` (``reload_weights``' own lines: ``named_parameters``, the name set, logging);
- ``gc``: collections by generation (``gc.callbacks``) and the time inside them; ``net0``: how
  much the collector's generation-0 count grew over the reload (tracked allocations less frees:
  what brings the next collection nearer), for reloads with no collection.

Pairs: per round, the block medians (4 steady reloads each) of ``refill>refill`` against
``off>off``, and of ``refill>off`` against ``off>off``; "N of M" = rounds where the first is
above. Prints medians per transition and those counts.
"""
from __future__ import annotations

import gc
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ["VLLM_TARGET_DEVICE"] = "cpu"
os.environ.setdefault("VLLM_PLUGINS", "derivgraph")
import torch  # noqa: E402

from vllm_integration.tiny_llama import SPECS, checkpoint, cold_start, tiny_llama_vllm  # noqa: E402

os.environ.setdefault("DERIVGRAPH_SPECS", str(SPECS))
ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 100
WARM = int(sys.argv[2]) if len(sys.argv) > 2 else 30
FREEZE = "nofreeze" not in sys.argv[3:]
PATTERN = "pattern" in sys.argv[3:]
HOOKS = "hooks" in sys.argv[3:]
UNHOOKED = "unhooked" in sys.argv[3:]
now = time.thread_time_ns
torch.set_num_threads(1)

acc: dict[str, int] = {}
phase = ["rest"]  # the vLLM phase a plugin probe's time is charged against
depth = [0]
gcs: dict[str, int] = {}
gc_start = [0]


def on_gc(stage: str, info: dict[str, Any]) -> None:
    if stage == "start":
        gc_start[0] = now()
        return
    gen = info["generation"]
    gcs[f"gen{gen}"] = gcs.get(f"gen{gen}", 0) + 1
    gcs["gc_ns"] = gcs.get("gc_ns", 0) + now() - gc_start[0]


def plugin_probe(fn: Callable[..., Any], wrap_result: bool = False) -> Callable[..., Any]:
    def timed(*a: Any, **k: Any) -> Any:
        if depth[0]:
            return fn(*a, **k)
        depth[0] += 1
        start = now()
        try:
            out = fn(*a, **k)
        finally:
            spent = now() - start
            depth[0] -= 1
            acc["plugin"] = acc.get("plugin", 0) + spent
            acc["plugin@" + phase[0]] = acc.get("plugin@" + phase[0], 0) + spent
        if wrap_result and out is not None:
            return plugin_probe(out)
        return out
    return timed


def phase_probe(fn: Callable[..., Any], name: str) -> Callable[..., Any]:
    def timed(*a: Any, **k: Any) -> Any:
        outer, phase[0] = phase[0], name
        start = now()
        try:
            return fn(*a, **k)
        finally:
            spent = now() - start
            acc[name] = acc.get(name, 0) + spent
            acc[name + "@" + outer] = acc.get(name + "@" + outer, 0) + spent
            phase[0] = outer
    return timed


with tempfile.TemporaryDirectory() as tmp, tiny_llama_vllm(Path(tmp)) as (mc, vc):
    from vllm.model_executor.model_loader.reload import inplace

    from vllm_integration import session
    weights = [checkpoint(0), checkpoint(1)]
    model = cold_start(mc, vc, weights[0], "")
    assert session.plan_for(model) is not None, "no plan: VLLM_PLUGINS=derivgraph?"
    for name in ("begin", "end", "note_names", "recording", "abort"):
        setattr(session, name, plugin_probe(getattr(session, name)))
    session.witness_note = plugin_probe(session.witness_note, wrap_result=True)
    inplace.initialize_layerwise_reload = phase_probe(inplace.initialize_layerwise_reload, "init")
    inplace.finalize_layerwise_reload = phase_probe(inplace.finalize_layerwise_reload, "final")
    from vllm.model_executor.model_loader.reload import layerwise
    layerwise._layerwise_process = phase_probe(layerwise._layerwise_process, "process")
    live = model.__dict__.get("load_weights")
    assert live is not None, "the plugin's live load_weights is not installed"
    model.__dict__["load_weights"] = phase_probe(live, "load")

    complete = session.complete
    from vllm_integration.reload_bench import _Unhooked
    unhooked = _Unhooked()  # after the probes: leaving restores the probed wrappers

    def reload(i: int, mode: str) -> dict[str, float]:
        os.environ["DERIVGRAPH_VLLM_MODE"] = mode
        acc.clear()
        gcs.clear()
        phase[0] = "rest"
        items = iter(weights[i % 2].items())
        count0 = gc.get_count()[0]
        start = now()
        with torch.no_grad():
            inplace.reload_weights(vc, model, items, None, True)
        whole = now() - start
        net0 = gc.get_count()[0] - count0
        row = {"whole": whole / 1e3, "plugin": acc.get("plugin", 0) / 1e3}
        row["vllm"] = row["whole"] - row["plugin"]
        parts = 0.0
        for p in ("init", "load", "final"):
            row[p] = (acc.get(p, 0) - acc.get("plugin@" + p, 0) - acc.get("process@" + p, 0)) / 1e3
            parts += acc.get(p, 0)
        # _layerwise_process runs inside load (and final): its time is shown apart, and load
        # and final are given without it
        row["process"] = (acc.get("process", 0) - acc.get("plugin@process", 0)) / 1e3
        row["rest"] = (whole - parts - acc.get("plugin@rest", 0)) / 1e3
        row.update({k: (v / 1e3 if k == "gc_ns" else v) for k, v in gcs.items()})
        if not gcs:  # the collector's gen-0 count grew by this (tracked allocations - frees)
            row["net0"] = net0
        return row

    for i in range(WARM):
        reload(i, "refill")
    gc.callbacks.append(on_gc)
    if FREEZE:
        gc.collect()
        gc.freeze()
    rows: dict[str, list[dict[str, float]]] = {}
    blocks: list[dict[str, dict[str, float]]] = []  # per round: a row of medians per arm
    cols = ("whole", "plugin", "vllm", "init", "load", "final", "rest", "process")
    sweep = torch.zeros(512 * 1024)  # 2 MiB of float32
    i = 0
    previous = "refill"
    for r in range(ROUNDS):
        if HOOKS or UNHOOKED:
            other = "hooks" if HOOKS else "unhooked"
            seq = ["off", "off", "off", "refill", "refill", "refill", "off", other, other, other]
        elif PATTERN:
            seq = ["off", "off", "off", "refill", "refill", "refill", "off", "sweep"]
        else:
            seq = (["off"] * 5 + ["refill"] * 5) if r % 2 == 0 else (["refill"] * 5 + ["off"] * 5)
        per: dict[str, list[dict[str, float]]] = {}
        for j, arm in enumerate(seq):
            if arm == "sweep":
                sweep.add_(1.0)
                key = "sweep>off"
            else:
                key = f"{previous}>{arm}"
            if arm == "hooks":
                session.complete = lambda *a, **k: None
            if arm == "unhooked":
                unhooked.__enter__()  # vLLM's own functions, timed by phase as the wrappers are
                inplace.initialize_layerwise_reload = phase_probe(
                    inplace.initialize_layerwise_reload, "init")
                inplace.finalize_layerwise_reload = phase_probe(
                    inplace.finalize_layerwise_reload, "final")
            try:
                mode = {"sweep": "off", "hooks": "refill", "unhooked": "off"}.get(arm, arm)
                row = reload(i, mode)
            finally:
                session.complete = complete
                if arm == "unhooked":
                    unhooked.__exit__()
            i += 1
            rows.setdefault(key, []).append(row)
            previous = "off" if arm == "sweep" else arm
            if PATTERN or HOOKS or UNHOOKED:
                per.setdefault(key, []).append(row)
            elif j % 5:  # the 4 steady reloads of a block
                per.setdefault(f"{arm}>{arm}", []).append(row)
            elif arm == "off":
                per.setdefault("refill>off", []).append(row)
        blocks.append({k: {c: statistics.median(x.get(c, 0) for x in v) for c in cols}
                       for k, v in per.items()})
    gc.callbacks.remove(on_gc)
    print(f"load {os.getloadavg()[0]:.2f}; {ROUNDS} rounds; freeze {FREEZE}; us, medians")
    print(f"  {'transition':14s} {'n':>4s} " + " ".join(f"{c:>8s}" for c in cols)
          + "   gc: gen0 gen1 gen2 (total) gc_us (total)  net0 (median)")
    for key in ("off>off", "refill>refill", "refill>off", "off>refill", "sweep>off", "off>hooks",
                "hooks>hooks", "hooks>off", "off>unhooked", "unhooked>unhooked",
                "unhooked>off"):
        rs = rows.get(key, [])
        if not rs:
            continue
        med = [statistics.median(x.get(c, 0) for x in rs) for c in cols]
        tot = [sum(x.get(f"gen{g}", 0) for x in rs) for g in (0, 1, 2)]
        gct = sum(x.get("gc_ns", 0) for x in rs)
        net = statistics.median(x["net0"] for x in rs if "net0" in x)
        print(f"  {key:14s} {len(rs):4d} " + " ".join(f"{m:8.1f}" for m in med)
              + f"   {tot[0]:4d} {tot[1]:4d} {tot[2]:4d}  {gct:8.1f}  {net:6.0f}")
    for a, b in (("refill>refill", "off>off"), ("refill>off", "off>off"),
                 ("refill>refill", "refill>off"), ("sweep>off", "off>off"),
                 ("hooks>hooks", "off>off"), ("refill>refill", "hooks>hooks"),
                 ("off>off", "unhooked>unhooked"), ("refill>refill", "unhooked>unhooked")):
        label = f"{a} vs {b}"
        for c in ("whole", "vllm", "init", "load", "final", "rest", "process"):
            d = [bl[a][c] - bl[b][c] for bl in blocks if a in bl and b in bl]
            if not d:
                continue
            above = sum(x > 0 for x in d)
            above = sum(x > 0 for x in d)
            print(f"  {label:32s} {c:6s} delta median {statistics.median(d):7.1f}"
                  f"  above in {above} of {len(d)}")
