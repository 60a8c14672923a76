"""Steady-state cost of each arm, in one process: reloads run in blocks of ``BLOCK`` of the same
arm (the first of each block, a transition, is dropped), arms rotated per cycle, so every kept
reload is "arm after the same arm" (the bench's ``steady_state_delta_us`` rule, with n per arm
instead of 1 in 4 rounds). Thread CPU clock, the tiny vLLM Llama. Arms: ``off``; ``refill`` (the
plugin); diagnostics (not exact, they only say where the steady state goes): ``noguard`` (the
plugin with the guard's restore skipped), ``hooks`` (the plugin's hooks, the completion a no-op:
derived tensors left stale, refilled by the next block's dropped first reload); any arm of
:data:`VARIANTS` (a patch made for that reload and undone after it). reload64 adds
``straight`` (a spike, not exact: the refill's steady-state work as straight-line code, see
:func:`_make_straight`) and ``lib_checks`` / ``lib_take`` / ``lib_after`` (the same with one part
by the library's code), and prints each arm's own time of the plan's run.
Prints, per arm, n, min / q25 / median (us) and median - off's; and per cycle the sign of
(arm - off) block medians.

    PYTHONPATH=. python3 benchmarks/results/refill66/steady_arms.py CYCLES [ARMS]

refill66: reload64's script with the arm ``slow`` (the library's refill with the steady entry
off, i.e. main's path) added; ``refill`` is the library as it is (the steady entry on).
    (ARMS comma-separated, default off,refill,noguard,hooks; BLOCK=5 by env)

guard67: the arm ``gslow`` (the guard's restore by the library, its steady entry off:
``derivgraph.guard.steady.ENABLED = False``, main's path; the plan's steady refill on, as in
``refill``), and per arm the guard's restore paired by block against ``refill``.

    PYTHONPATH=. python3 benchmarks/results/guard67/steady_arms.py CYCLES refill,gslow
"""

from __future__ import annotations

import gc
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ["VLLM_TARGET_DEVICE"] = "cpu"
os.environ.setdefault("VLLM_PLUGINS", "derivgraph")


def _patch(owner: Any, name: str, value: Any) -> Any:
    old = owner.__dict__[name]
    setattr(owner, name, value)
    return lambda: setattr(owner, name, old)


def _no_tensor_guard() -> Any:
    """Diagnostic: the take's layout check by its sweeps only (no TorchDynamo guard)."""
    from derivgraph.runtime.engine import Layouts
    return _patch(Layouts, "match", Layouts.swept)


def _guard_storage_trusted() -> Any:
    """Diagnostic (not exact): the guard's startup-storage check not run."""
    from derivgraph.guard.guard import Guard
    return _patch(Guard, "storage_kept", lambda self: True)


def _no_after() -> Any:
    """The guard's tensors not handed to the plan (its own address check, as before reload62):
    the plugin with this tree's code, the joint check of ``Holders.after`` off."""
    from derivgraph.guard.guard import Guard
    return _patch(Guard, "addresses", property(lambda self: None))


_FAST: dict[int, Any] = {}
_FALLBACKS: list[int] = []
#: which part of the straight-line refill runs the library's code instead (None: none)
_LIBRARY_PART: list[str | None] = [None]


def _make_straight(plan: Any) -> Any:
    """The steady-state refill of this plan (every check passing, the same holders rebuilt as
    the last reload) as one function: the same native calls (the hop and source identity
    sweeps, the sources' joint address gather, the holder read, the layout guard, the take's
    ``_foreach_copy_``, the partial pass, the staged numbers' read, the rebind's dict stores,
    the joint address gather after the pass) with the library's Python frames between them
    gone (the derived scalars' holders checked too). Not exact (a failed check after a write
    raises instead of falling back; no counters; the settles, which find nothing to do here,
    not called): only the ceiling of inlining."""
    import operator
    from itertools import compress

    import torch

    from derivgraph.runtime.report import RunReport
    _is, _not, get = operator.is_, operator.not_, dict.get
    h = plan.holders
    hops = h.hops
    assert not hops.slow
    hd, hk, he = hops.dicts, hops.keys, hops.expected
    sd, sk, sat = h._source_checks
    joint = h._joint[2]
    table = h.table
    td, tk, ts = table.dicts, table.keys, table.storages
    rt = plan._refill_table
    pick, rstor = rt._pick, rt.storages
    (mask,) = [m for m in rt._parts if m is not None]
    part = rt._parts[mask]
    guard = part.layouts._guard
    ours = part.ours
    rest = plan._taken_rest[mask]
    pfn = plan.programs.partial(rest).fn
    (stage_rows,) = [r for r in plan.tensors._stage_rows.values() if r]
    storage = operator.attrgetter("storage")
    after = h._after_joint[2]
    scalars = h._scalars
    h._scalars_current()  # its reads resolved
    scalar_reads = h._scalar_reads
    slow = type(plan).refill

    def fallback(plan: Any, verify: bool) -> Any:
        _FALLBACKS.append(1)
        return slow(plan, verify=verify)

    def refill(*, verify: bool = False) -> Any:
        report = RunReport(mode="refill")
        lib = _LIBRARY_PART[0]
        if lib == "checks":  # the library's source check (hops, sources, joint gather)
            if not h.sources_intact(report):
                return fallback(plan, verify=verify)
        elif not (all(map(_is, map(get, hd, hk), he)) and all(map(_is, map(get, sd, sk),
                                                                  sat.tensors))
                  and joint.intact()):
            return fallback(plan, verify=verify)
        if lib == "take":  # the library's take (read, mask, layout guard, copy, note_read)
            if plan._take_engine_values(report) != rest:
                raise RuntimeError("not the steady state")
            pfn()
        else:
            current = list(map(get, td, tk))
            picked = current if pick is None else pick(current)
            if tuple(map(_not, map(_is, picked, rstor))) != mask:
                return fallback(plan, verify=verify)
            theirs = list(compress(picked, mask))
            if not guard.check(*theirs):
                return fallback(plan, verify=verify)
            torch._foreach_copy_(ours, theirs)
            pfn()
        for tolist, _g, entries in stage_rows:
            if tolist() != list(map(storage, entries)):
                raise RuntimeError("a scalar changed: not the steady state")
        if lib == "after":  # the library's rebind and moved()
            report.rebinds = plan.rebind(report)
            report.moved = h.moved(plan.source_ptrs, report)
            return report
        if lib == "take":
            current = list(map(get, td, tk))
        for i in compress(range(len(current)), map(_not, map(_is, current, ts))):
            td[i][tk[i]] = ts[i]
        if scalars and not all(map(operator.eq, map(get, *scalar_reads), map(storage, scalars))):
            raise RuntimeError("a scalar holder changed: not the steady state")
        report.rebinds = 4
        report.moved = [] if after.intact() else ["?"]
        h.after_checked = report
        return report

    return refill


def _straight() -> Any:
    """Spike (not exact): the plan's refill as :func:`_make_straight`'s straight-line code."""
    plan = _STATE["plan"]
    fast = _FAST.get(id(plan))
    if fast is None:
        fast = _FAST[id(plan)] = _make_straight(plan)
    plan.refill = fast
    return lambda: plan.__dict__.pop("refill", None)


_STATE: dict[str, Any] = {}


def _make_straight_guard(guard: Any) -> Any:
    """The guard's steady-state restore (nothing to restore; the raw words suspect the same
    items as last time; every hit a harmless rebuilt value; the startup storage proven by the
    plan) as one function: the same reads as :meth:`Sweep._dirty_whole` with the frames of
    ``restore -> _plan_watched -> survey -> _dirty -> dirty -> _dirty_whole -> _compared ->
    _gather -> differing -> _differing -> _mismatches -> _verdict`` gone. Not exact (anything
    else raises; other suspects than the last reload's, as after another arm's reload, run
    the library's restore): only the ceiling of inlining."""
    import operator
    from itertools import repeat

    from derivgraph.guard.holders import MISSING
    from derivgraph.guard.template import harmless
    _is, get = operator.is_, dict.get
    watch = guard.watch
    sweep = watch.sweep
    assert sweep.whole is not None and not sweep.lists and not watch.opaque
    gather = sweep.gathers[sweep.whole]
    templates, owners = sweep.acc_templates, sweep.acc_container
    slots = gather.slots
    slow = type(guard).restore

    def restore(model: Any, *, strict: bool = False, full: bool = False,
                declared: Any = (), storage_kept: bool = False) -> Any:
        if full or not storage_kept:
            return slow(guard, model, strict=strict, full=full, declared=declared,
                        storage_kept=storage_kept)
        if list(map(len, gather.dicts)) != gather.lengths:
            raise RuntimeError("a dict resized: not the steady state")
        suspects = slots.suspects()
        columns = gather.columns
        if suspects is not columns[0]:  # the first reload after another arm's: the library's
            _FALLBACKS.append(1)
            return slow(guard, model, strict=strict, full=full, declared=declared,
                        storage_kept=storage_kept)
        _s, dicts, keys, values = columns
        flags = list(map(_is, map(get, dicts, keys, repeat(MISSING, len(keys))), values))
        report = guard._report()
        i = -1
        for _ in range(flags.count(False)):
            i = flags.index(False, i + 1)
            b = gather.acc[suspects[i]]
            if templates[b] is None or not harmless(templates[b], dicts[i].get(keys[i], MISSING)):
                raise RuntimeError(f"container {owners[b]} changed: not the steady state")
        guard.restores += 1
        return report

    return restore


def _straight_guard() -> Any:
    """Spike (not exact): :func:`_straight` and the guard's restore as
    :func:`_make_straight_guard`'s straight-line code."""
    undo = _straight()
    guard = _STATE["guard"]
    fast = _FAST.get(id(guard))
    if fast is None:
        fast = _FAST[id(guard)] = _make_straight_guard(guard)
    guard.restore = fast

    def both() -> None:
        guard.__dict__.pop("restore", None)
        undo()
    return both


def _straight_with(part: str) -> Any:
    """:func:`_straight` with one part by the library (``checks``, ``take`` or ``after``)."""
    def patch() -> Any:
        undo = _straight()
        _LIBRARY_PART[0] = part

        def both() -> None:
            _LIBRARY_PART[0] = None
            undo()
        return both
    return patch


def _slow() -> Any:
    """refill66: the plan's refill by its slow path (the steady entry off: main's code path)."""
    from derivgraph.runtime import steady
    return _patch_module(steady, "ENABLED", False)


def _patch_module(module: Any, name: str, value: Any) -> Any:
    old = getattr(module, name)
    setattr(module, name, value)
    return lambda: setattr(module, name, old)


def _gslow() -> Any:
    """guard67: the guard's restore by the library (its steady entry off: main's path)."""
    from derivgraph.guard import steady
    return _patch_module(steady, "ENABLED", False)


VARIANTS = {"slow": _slow, "gslow": _gslow, "straight": _straight,
            "straight_guard": _straight_guard,
            "lib_checks": _straight_with("checks"),
            "lib_take": _straight_with("take"), "lib_after": _straight_with("after"),
            "notg": _no_tensor_guard, "nostore": _guard_storage_trusted,
            "noafter": _no_after}


def _q(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def main(cycles: int, arms: list[str]) -> None:
    import torch

    from vllm_integration.tiny_llama import SPECS, checkpoint, cold_start, tiny_llama_vllm

    os.environ.setdefault("DERIVGRAPH_SPECS", str(SPECS))
    torch.set_num_threads(1)
    block = int(os.environ.get("BLOCK", "5"))
    now = time.thread_time
    with tempfile.TemporaryDirectory() as tmp, tiny_llama_vllm(Path(tmp)) as (mc, vc):
        from vllm.model_executor.model_loader.reload import inplace

        from vllm_integration import session

        weights = [checkpoint(0), checkpoint(1)]
        from derivgraph.guard import Guard
        library_restores: list[int] = []  # guard67: the guard's library restores (kept reloads)
        restore_slow = Guard._restore_slow

        def counted_restore(self: Any, *a: Any, **k: Any) -> Any:
            library_restores.append(1)
            return restore_slow(self, *a, **k)

        Guard._restore_slow = counted_restore  # before the entry binds it
        model = cold_start(mc, vc, weights[0], "")
        slow_of: dict[str, int] = {a: 0 for a in arms}
        assert session.plan_for(model) is not None
        state = session.state_for(model)
        _STATE["plan"] = state.plan
        _STATE["guard"] = state.guard
        complete = session.complete
        from vllm_integration import completion
        run_plan = completion._run_plan
        plan_us: list[float] = []

        def timed_run_plan(*a: Any) -> Any:
            start = now()
            try:
                return run_plan(*a)
            finally:
                plan_us.append((now() - start) * 1e6)

        completion._run_plan = timed_run_plan
        pass_us: dict[str, list[float]] = {a: [] for a in arms}
        restore_guard = completion.restore_guard
        guard_us: list[float] = []
        guard_arm: dict[str, list[float]] = {a: [] for a in arms}

        def timed_restore_guard(*a: Any) -> Any:
            start = now()
            try:
                return restore_guard(*a)
            finally:
                guard_us.append((now() - start) * 1e6)

        completion.restore_guard = timed_restore_guard

        def reload(i: int, arm: str) -> float:
            os.environ["DERIVGRAPH_VLLM_MODE"] = "off" if arm == "off" else "refill"
            guard = None
            if arm == "noguard":
                guard, state.guard = state.guard, None
            if arm == "hooks":
                session.complete = lambda *a, **k: None
            undo = VARIANTS[arm]() if arm in VARIANTS else None
            items = iter(weights[i % 2].items())
            try:
                start = now()
                with torch.no_grad():
                    inplace.reload_weights(vc, model, items, None, True)
                return (now() - start) * 1e6
            finally:
                session.complete = complete
                if undo is not None:
                    undo()
                if guard is not None:
                    state.guard = guard

        for i, arm in enumerate(arms * 2):
            reload(i, arm)
        gc.collect()
        gc.freeze()
        out: dict[str, list[float]] = {a: [] for a in arms}
        blocks: dict[str, list[float]] = {a: [] for a in arms}
        gblocks: dict[str, list[float]] = {a: [] for a in arms}
        i = 0
        for c in range(cycles):
            order = arms[c % len(arms):] + arms[:c % len(arms)]
            if (c // len(arms)) % 2:
                order = order[::-1]
            for arm in order:
                kept = []
                gkept: list[float] = []
                for k in range(block):
                    plan_us.clear()
                    guard_us.clear()
                    library_restores.clear()
                    t = reload(i, arm)
                    i += 1
                    if k:
                        kept.append(t)
                        pass_us[arm] += plan_us
                        guard_arm[arm] += guard_us
                        slow_of[arm] += len(library_restores)
                        gkept += guard_us
                out[arm] += kept
                blocks[arm].append(statistics.median(kept))
                if gkept:
                    gblocks[arm].append(statistics.median(gkept))
    print("guard67: kept reloads whose guard restore ran the library's restore: "
          + ", ".join(f"{a} {slow_of[a]} of {len(out[a])}" for a in arms))
    print(f"cycles {cycles} block {block} load {os.getloadavg()[0]:.1f}"
          f" straight fallbacks {len(_FALLBACKS)}")
    off = statistics.median(out["off"]) if "off" in out else 0.0
    for arm in arms:
        v = out[arm]
        med = statistics.median(v)
        line = f"{arm:8s} n {len(v):5d} min/q25/med {min(v):8.1f} {_q(v, 25):8.1f} {med:8.1f}" \
               f"  med-off {med - off:7.1f}"
        if arm != "off" and "off" in out:
            above = sum(a > b for a, b in zip(blocks[arm], blocks["off"]))
            line += f"  block med > off in {above} of {len(blocks[arm])}"
        if arm not in ("off", "refill") and "refill" in out:
            diffs = [a - b for a, b in zip(blocks[arm], blocks["refill"])]
            line += f" | vs refill: paired block med {statistics.median(diffs):7.1f}, lower in " \
                    f"{sum(d < 0 for d in diffs)} of {len(diffs)}"
        print(line)
    for arm in arms:
        if pass_us[arm]:
            v = pass_us[arm]
            print(f"{arm:8s} the plan's run (completion._run_plan): n {len(v)} min/q25/med "
                  f"{min(v):7.1f} {_q(v, 25):7.1f} {statistics.median(v):7.1f}")
    for arm in arms:
        if guard_arm[arm]:
            v = guard_arm[arm]
            line = (f"{arm:8s} the guard's restore (completion.restore_guard): n {len(v)} "
                    f"min/q25/med {min(v):7.1f} {_q(v, 25):7.1f} {statistics.median(v):7.1f}")
            if arm != "refill" and gblocks.get("refill") and gblocks[arm]:
                diffs = [a - b for a, b in zip(gblocks[arm], gblocks["refill"])]
                line += (f" | vs refill: paired block med {statistics.median(diffs):6.1f}, "
                         f"refill lower in {sum(d > 0 for d in diffs)} of {len(diffs)}")
            print(line)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 50,
         sys.argv[2].split(",") if len(sys.argv) > 2 else ["off", "refill", "noguard", "hooks"])
