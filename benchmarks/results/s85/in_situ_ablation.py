"""Issue 20.5, a diagnostic: what each part of the plugin's reload costs *inside* vLLM's reload.

Timed warm (called again and again on their own), the steady refill entry and the guard's steady
restore take ~25 and ~12 us on the tiny Llama (``warm`` below); inside vLLM's ``reload_weights``
the plugin reload costs ~230-310 us more than ``off``. This script finds where: in one process,
every arm below runs twice in a row per round and the second reload is timed (the thread's clock,
torch on one thread, ``gc.freeze()`` first: as ``bench_vllm_reload.py``), so each figure is the
steady state of that arm (``X`` after ``X``), its median less ``off``'s median and the median of
the per-round differences (``paired``). The arm order rotates and reverses by round.

The arms other than ``off`` and ``plugin`` replace a part of the plugin for that reload only
(a diagnostic: some leave derived tensors stale, which the next ``plugin`` reload rewrites).
Last, ``warm`` times the steady refill and restore on their own, back to back (the holders the
engine rebuilds re-pointed to fresh clones before each refill):

- ``hooks``: the session's completion skipped (the hooks and session scopes only);
- ``refill``: the completion is ``plan.refill(verify=True, after=guard.addresses)`` alone;
- ``refill_guard``: that, then the guard's restore (no counters, no report);
- ``writes``: only the refill's writes, no check (the taken copy, the partial pass, the rebind);
- ``guard_stub``: the plugin with the guard's restore answered by a report made before;
- ``no_survey``: the plugin with the guard's steady entry less its survey (the dict words and
  the suspects' values);
- ``numpy_once``: the hooks and one NumPy gather of 143 words (waking NumPy's code);
- ``torch_once``: the hooks and one torch ``take`` and ``equal`` of the same words;
- ``torch_copies``: the hooks and the refill's copies (the taken scalars twice, the partial
  pass);
- ``stage_copies``: the hooks and the partial pass's copies into the derived Python scalars'
  stage buffer, then its ``tolist()`` (what the pass does for the scalars);
- ``scalar_tolist``: the hooks and ``tolist()`` of each of those copies' inputs instead (the
  same numbers, read from the CPU tensors directly, no copy);
- ``lean``: a completion of the refill, the guard's restore and the counters a reload adds to
  (no fold check, no spec switch, no record of the last reload);
- ``memoryview_addresses``: the plugin with every address check's words read one by one from a
  ``memoryview`` of the address space instead of by NumPy gathers (the guard's survey keeps
  NumPy).

    python3 benchmarks/results/s85/in_situ_ablation.py --rounds 800 \
        --arms off,plugin,hooks,refill,refill_guard,writes --json OUT.json
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ["VLLM_TARGET_DEVICE"] = "cpu"  # before vLLM is imported
os.environ.setdefault("VLLM_PLUGINS", "derivgraph")

import numpy as np  # noqa: E402
import torch  # noqa: E402

from derivgraph.addresses import Addresses  # noqa: E402
from vllm_integration.tiny_llama import SPECS, checkpoint, cold_start, tiny_llama_vllm  # noqa: E402

os.environ.setdefault("DERIVGRAPH_SPECS", str(SPECS))

ARMS = ("off", "plugin", "hooks", "refill", "refill_guard", "writes", "guard_stub", "no_survey",
        "numpy_once", "torch_once", "torch_copies", "lean", "memoryview_addresses",
        "stage_copies", "scalar_tolist")


def _without(source: str, start: str, end: str) -> str:
    """``source`` less the lines from the one holding ``start`` to the one before ``end``."""
    a, b = source.find(start), source.find(end)
    if a < 0 or b < a:
        raise SystemExit(f"the steady entry's source changed: {start!r} .. {end!r} not found")
    a, b = source.rfind("\n", 0, a) + 1, source.rfind("\n", 0, b) + 1
    return source[:a] + source[b:]


_SPACE = memoryview((ctypes.c_int64 * ((1 << 47) // 8 - 1)).from_address(8)).cast("B").cast("q")
_MEMORYVIEW_ROWS: dict[int, tuple[list[int], list[int], list[int], list[int]]] = {}


def _word_rows(view: np.ndarray, index: np.ndarray) -> list[int]:
    """The rows of ``_SPACE`` that ``view.take(index)`` reads."""
    low = view.__array_interface__["data"][0]
    return [((low - 8) >> 3) + int(i) for i in index]


def memoryview_kept(self: Any) -> bool:
    """``Addresses.kept`` with each word read from ``_SPACE`` (no NumPy call once made)."""
    rows = _MEMORYVIEW_ROWS.get(id(self))
    if rows is None:
        impls, stores = self._expected
        rows = _MEMORYVIEW_ROWS[id(self)] = (
            _word_rows(self._impls, self._impl_index), np.frombuffer(impls, np.int64).tolist(),
            _word_rows(self._stores, self._store_index), np.frombuffer(stores, np.int64).tolist())
    get = _SPACE.__getitem__
    return list(map(get, rows[0])) == rows[1] and list(map(get, rows[2])) == rows[3]


def _function(program: Any, name: str) -> str:
    """The text of ``name`` in a printed program (its header comments dropped)."""
    text = program.source.split(f"def {name}", 1)[1]
    return f"def {name}" + text.split("\ndef ", 1)[0]


def _warm(plan: Any, guard: Any, model: Any, bound: dict[str, Any], calls: int) \
        -> dict[str, float]:
    """The steady refill and the guard's steady restore timed on their own, back to back
    (warm caches): before each refill the holders the engine rebuilds are re-pointed to fresh
    clones, as vLLM's reload leaves them (the refill's checks then pass as in a reload)."""
    dicts, keys, storages = bound["table_dicts"], bound["table_keys"], bound["table_storages"]
    stale = bound["stale"]
    refill, restore = [], []
    with torch.no_grad():
        for _ in range(calls):
            for i in stale:
                dicts[i][keys[i]] = storages[i].clone()
            start = time.thread_time()
            report = plan.refill(verify=True, after=guard.addresses)
            refill.append(time.thread_time() - start)
            if report.moved or plan._steady is None:
                raise SystemExit("the warm refill left the steady state: not comparable")
            start = time.thread_time()
            guard.restore(model, declared=plan.declared_storages, storage_kept=True)
            restore.append(time.thread_time() - start)
    return {"refill_us": round(statistics.median(refill) * 1e6, 1),
            "restore_us": round(statistics.median(restore) * 1e6, 1)}


def measure(rounds: int, arms: list[str], warm_calls: bool = True) -> dict[str, Any]:
    from vllm.model_executor.model_loader.reload import inplace

    from derivgraph.compiler.generated import define
    from vllm_integration import session

    torch.set_num_threads(1)
    now = time.thread_time
    with tempfile.TemporaryDirectory() as tmp, tiny_llama_vllm(Path(tmp)) as (mc, vc):
        weights = [checkpoint(0), checkpoint(1)]
        model = cold_start(mc, vc, weights[0], "")
        plan, state = session.plan_for(model), session.state_for(model)

        def reload(i: int) -> float:
            items = iter(weights[i % 2].items())
            start = now()
            with torch.no_grad():
                inplace.reload_weights(vc, model, items, None, True)
            return now() - start

        os.environ["DERIVGRAPH_VLLM_MODE"] = "refill"
        for i in range(3):  # the steady entries made
            reload(i)
        guard, complete = state.guard, session.complete
        refill_fn, guard_fn = plan._steady, guard._steady
        if refill_fn is None or guard_fn is None:
            raise SystemExit("no steady refill or restore entry: nothing to take apart")
        bound = refill_fn.fn.__globals__
        rest = bound["rest_pass"]
        partial = rest.fn if rest is not None else (lambda: None)
        ours, table_dicts, table_keys = bound["ours"], bound["table_dicts"], bound["table_keys"]
        taken_at, stale, storages = bound["taken_at"], bound["stale"], bound["table_storages"]
        made = guard.restore(model, declared=plan.declared_storages, storage_kept=True)
        restore_src = _function(guard_fn, "restore_steady")
        no_survey = define(_without(restore_src, "# Sweep._dirty_whole", "# Guard._moved_storage"),
                           "restore_steady", dict(guard_fn.fn.__globals__), "restore_steady")
        words = np.arange(1000, dtype=np.int64)
        picks = np.arange(0, 1000, 7)
        scratch = [t.clone() for t in ours]

        def writes() -> None:
            current = list(map(dict.get, table_dicts, table_keys))
            torch._foreach_copy_(ours, list(map(current.__getitem__, taken_at)))
            partial()
            for i in stale:
                table_dicts[i][table_keys[i]] = storages[i]

        def refill_guard() -> None:
            plan.refill(verify=True, after=guard.addresses)
            guard.restore(model, declared=plan.declared_storages, storage_kept=True)

        def lean() -> None:
            counters = state.counters
            report = plan.refill(verify=True, after=guard.addresses)
            counters.refills += 1
            counters.tensors_written += report.written
            counters.bytes_written += report.bytes
            counters.rebinds += report.rebinds
            counters.reloads += 1
            counters.layerwise += 1
            kept = plan.holders.after_checked is report
            guarded = guard.restore(model, declared=plan.declared_storages, storage_kept=kept)
            counters.guard_restored_last = len(guarded.restored)
            counters.guard_recapture_last = len(guarded.recapture)

        pass_globals = partial.__globals__ if rest is not None else {}
        stage_of = {b.untyped_storage().data_ptr(): b for b, _targets in plan.tensors.stage_groups}
        pairs = [(c, g) for c, g in zip(pass_globals.get("copies", ()),
                                        pass_globals.get("group", ()))
                 if c.untyped_storage().data_ptr() in stage_of]
        stage_outs, stage_ins = [c for c, _ in pairs], [g for _, g in pairs]
        buffers = [stage_of[p] for p in dict.fromkeys(c.untyped_storage().data_ptr()
                                                       for c in stage_outs)]

        def stage_copies() -> None:
            torch._foreach_copy_(stage_outs, stage_ins)
            for buffer in buffers:
                buffer.tolist()

        tensor_words = torch.arange(1000)
        tensor_picks = torch.arange(0, 1000, 7)
        tensor_expected = tensor_words.take(tensor_picks)

        def torch_copies() -> None:
            torch._foreach_copy_(ours, scratch)
            partial()
            torch._foreach_copy_(ours, scratch)

        completions: dict[str, Callable[[], Any] | None] = {
            "hooks": lambda: None,
            "refill": lambda: plan.refill(verify=True, after=guard.addresses),
            "refill_guard": refill_guard, "writes": writes,
            "numpy_once": lambda: words.take(picks).tobytes(), "torch_copies": torch_copies,
            "torch_once": lambda: torch.equal(tensor_words.take(tensor_picks), tensor_expected),
            "lean": lean, "stage_copies": stage_copies,
            "scalar_tolist": lambda: [t.tolist() for t in stage_ins],
        }
        numpy_kept = Addresses.kept
        if not pairs:
            raise SystemExit("no copy into a stage buffer in the partial pass")
        for check in (bound["joint"], bound["after_check"]):  # the two reads agree, and pass
            if check.words is None or not memoryview_kept(check.words) \
                    or not numpy_kept(check.words):
                raise SystemExit("the memoryview read disagrees with Addresses.kept")

        guard_fn_made = guard_fn.fn

        def arm(name: str) -> None:
            Addresses.kept = memoryview_kept if name == "memoryview_addresses" else numpy_kept
            session.complete = complete
            guard.__dict__.pop("restore", None)
            guard_fn.fn = guard_fn_made
            os.environ["DERIVGRAPH_VLLM_MODE"] = "off" if name == "off" else "refill"
            body = completions.get(name)
            if body is not None:
                session.complete = lambda *args, **kwargs: body()
            elif name == "guard_stub":
                guard.restore = lambda *args, **kwargs: made
            elif name == "no_survey":
                guard_fn.fn = no_survey

        for name in arms:
            arm(name)
            reload(0)
            reload(1)
        gc.collect()
        gc.freeze()
        times: dict[str, list[float]] = {name: [] for name in arms}
        k = 0
        for r in range(rounds):
            order = arms[r % len(arms):] + arms[:r % len(arms)]
            for name in (order[::-1] if (r // len(arms)) % 2 else order):
                arm(name)
                reload(k)
                times[name].append(reload(k + 1) * 1e6)
                k += 2
        arm("plugin")
        reload(k)
        warm = _warm(plan, guard, model, bound, 2000) if warm_calls else None
        reload(k + 1)
        if plan.moved():
            raise SystemExit("a derived tensor moved: the arms left the plan unsound")
    off = statistics.median(times["off"])
    return {"arms": {name: {"median_us": round(statistics.median(v), 1),
                            "delta_us": round(statistics.median(v) - off, 1),
                            "paired_us": round(statistics.median(
                                a - b for a, b in zip(v, times["off"])), 1)}
                     for name, v in times.items()},
            "warm": warm}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=800)
    ap.add_argument("--arms", default="off,plugin,hooks,refill,refill_guard,writes")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    arms = args.arms.split(",")
    unknown = sorted(set(arms) - set(ARMS))
    if unknown or "off" not in arms:
        raise SystemExit(f"arms are {', '.join(ARMS)} (off among them); not {unknown}")
    result = {"rounds": args.rounds, "load_before": os.getloadavg()[0],
              **measure(args.rounds, arms), "load_after": os.getloadavg()[0]}
    for name, row in result["arms"].items():
        print(f"{name:14s} {row['median_us']:9.1f} us  delta {row['delta_us']:7.1f}"
              f"  paired {row['paired_us']:7.1f}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    print(f"warm, on their own: {result['warm']}")


if __name__ == "__main__":
    main()
