"""In-process A/B of this branch's per-reload trims on the tiny vLLM Llama (refill mode): one
process, one model; every iteration runs an ``off`` reload then a plugin reload, and the plugin
reload alternates between main's functions (A, copied below from main at 91573dbd) and this
tree's (B), so both run equally cold and under the same load. Thread CPU clock; prints, per arm,
min / q25 / median of the plugin reload, of ``plugin - off`` (paired), of the completion and of
the guard's restore, and in how many of the K blocks of rounds B's median is lower.

    PATH=/work/venv/bin:$PATH PYTHONPATH=/work/wt/guard60 python3 benchmarks/results/guard60/inproc_ab.py 400
"""

from __future__ import annotations

import gc
import logging
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

os.environ["VLLM_TARGET_DEVICE"] = "cpu"
os.environ.setdefault("VLLM_PLUGINS", "derivgraph")

from vllm_integration.tiny_llama import SPECS, checkpoint, cold_start, tiny_llama_vllm  # noqa: E402

os.environ.setdefault("DERIVGRAPH_SPECS", str(SPECS))

import torch  # noqa: E402
from vllm.model_executor.model_loader.reload import inplace  # noqa: E402

from derivgraph.guard import guard as guard_mod  # noqa: E402
from derivgraph.guard import sweep as sweep_mod  # noqa: E402
from derivgraph.guard.holders import MISSING  # noqa: E402
from vllm_integration import completion, guarding, reload_wrappers, session  # noqa: E402

# ---- main's versions (A) ------------------------------------------------------------------------


def _session_a():
    from vllm_integration import session

    return session


def _compared_a(self, order):
    gather = self._gather(order)
    lens = list(map(len, gather.dicts))
    resized = [] if lens == gather.lengths else [
        i for i, n, was in zip(order, lens, gather.lengths) if n != was]
    acc, dicts, keys = gather.acc, gather.acc_dicts, gather.acc_keys
    hits = gather.differing()
    if not hits:
        return resized, [], []
    return resized, [acc[j] for j in hits], [dicts[j].get(keys[j], MISSING) for j in hits]


def _moved_storage_a(self, actions, report):
    if self.storage_kept():
        return
    at = self._at
    now = list(map(torch.Tensor.data_ptr, at.tensors))
    for entry, was, ptr in zip(self._moved, at.ptrs, now):
        if ptr != was and (id(entry.tensor), 0) not in actions:
            self._decide(entry, None, None, entry.paths[0], actions, report, None)


def restore_guard_a(model, guard, plan, mode, kind):
    if guard is None:
        return None
    declared = plan.declared_storages()
    report = guard.restore(model, strict=mode == "strict", declared=declared)
    if report.restored or report.copied_only:
        guarding.logger.info("derivgraph: %s %s reload: %s", type(model).__name__, kind, report)
    if report.recapture:
        raise AssertionError("not in this probe")
    return report


@dataclass
class SessionA:
    """main's Session (an instance dict)."""

    kind: str
    depth: int = 0
    layerwise: bool = False
    layerwise_open: bool = False
    names: set[str] = field(default_factory=set)
    runtime_names: set[str] = field(default_factory=set)
    before: Any = None
    watch: Any = None
    recording: bool = False


def begin_a(model, kind, *, layerwise=False, restart=False, records=False):
    state = session.state_for(model)
    if state is None:
        return
    with session._LOCK:
        s = state.session
        if s is not None and (restart or (layerwise and s.layerwise_open)):
            s = state.session = None
        if s is None:
            mode = session.current_mode()
            s = state.session = SessionA(kind)
            baseline = mode == "strict" or len(state.plan) > 0
            if mode == "strict":
                raise AssertionError("not in this probe")
            if state.baseline is None and baseline:
                state.baseline = s.before or session.snapshot(model)
        s.depth += 1
        s.recording |= records
        if layerwise:
            s.layerwise = s.layerwise_open = True


def complete_a(model, state, sess, mode, updated):
    c = completion
    if mode == "off":
        return None
    plan, counters = state.plan, state.counters
    start = time.perf_counter()
    c.check_folds(plan, state.witness, mode)
    report = c._run_plan(plan, sess.layerwise, mode, updated)
    if report is not None:
        if report.mode == "refill":
            counters.refills += 1
        else:
            counters.recomputes += 1
        counters.tensors_written += report.written
        counters.bytes_written += report.bytes
        counters.rebinds += report.rebinds
    counters.reloads += 1
    if sess.layerwise:
        counters.layerwise += 1
    else:
        counters.in_place += 1
    guarded = ARM["restore_guard"](model, state.guard, plan, mode, sess.kind)
    if guarded is None:
        counters.guard_restored_last = counters.guard_recapture_last = 0
    else:
        counters.guard_restored_last = len(guarded.restored)
        counters.guard_recapture_last = len(guarded.recapture)
    moved = report.moved if report is not None and report.moved else c._NONE
    found = None
    if sess.watch is None and sess.before is None:
        result = c._CLEAN if not moved else c.AuditResult(list(moved))
    else:
        raise AssertionError("not in this probe")
    specs = c.verify_spec_values(plan) if c.verify_specs_enabled(mode) and len(plan) else None
    findings = c.strict_findings(result, found, report, specs) \
        if c._anything(result, found, report, specs) else c._NONE
    counters.moved_last, counters.undeclared_last = len(result.moved), len(result.undeclared)
    counters.unrefreshed_last = len(found.unrefreshed) if found is not None else 0
    counters.scalars_changed_last = sum(p.startswith(c._SCALAR) for p in findings) \
        if findings else 0
    counters.spec_mismatches_last = len(specs.mismatches) if specs is not None else 0
    counters.seconds_last = time.perf_counter() - start
    counters.last = c.LastReload(sess.kind, mode, sess.layerwise,
                                 len(sess.runtime_names or sess.names), report, found,
                                 specs, guarded)
    if report is not None:
        c.logger.info("derivgraph: %s %s reload: %s", type(model).__name__, sess.kind, report)
    if findings or (specs is not None and specs.mismatches):
        raise AssertionError("not in this probe")
    return report


def complete_b(model, state, sess, mode, updated):
    return B_COMPLETE(model, state, sess, mode, updated)


B_COMPLETE = completion.complete
ARMS = {
    "A": {"_session": _session_a, "_compared": _compared_a, "_moved_storage": _moved_storage_a,
          "restore_guard": restore_guard_a, "begin": begin_a, "complete": complete_a},
    "B": {"_session": reload_wrappers._session, "_compared": sweep_mod.Sweep._compared,
          "_moved_storage": guard_mod.Guard._moved_storage,
          "restore_guard": guarding.restore_guard, "begin": session.begin,
          "complete": completion.complete},
}
ARM: dict[str, Any] = ARMS["B"]


def use(arm: str) -> None:
    global ARM
    ARM = f = ARMS[arm]
    reload_wrappers._session = f["_session"]
    sweep_mod.Sweep._compared = f["_compared"]
    guard_mod.Guard._moved_storage = f["_moved_storage"]
    session.begin = f["begin"]
    session.complete = f["complete"]


now = time.thread_time_ns
T: dict[str, dict[str, list[float]]] = {a: {k: [] for k in ("on", "off", "paired", "complete",
                                                              "guard", "sweep")} for a in ARMS}
cur = {"arm": "B", "on": False}


def timer(owner: Any, name: str, label: str) -> None:
    fn = getattr(owner, name)

    def timed(*a: Any, **k: Any) -> Any:
        if not cur["on"]:
            return fn(*a, **k)
        start = now()
        try:
            return fn(*a, **k)
        finally:
            T[cur["arm"]][label].append((now() - start) / 1e3)

    setattr(owner, name, timed)


timer(session, "_complete", "complete")
timer(guard_mod.Guard, "restore", "guard")
timer(sweep_mod.Sweep, "dirty", "sweep")

n = int(sys.argv[1]) if len(sys.argv) > 1 else 400
blocks = 8
logging.basicConfig(level=logging.WARNING)
torch.set_num_threads(1)
with tempfile.TemporaryDirectory() as tmp, tiny_llama_vllm(Path(tmp)) as (mc, vc):
    weights = [checkpoint(0), checkpoint(1)]
    model = cold_start(mc, vc, weights[0], "")
    for i in range(40):
        use("AB"[i % 2])
        os.environ["DERIVGRAPH_VLLM_MODE"] = "refill"
        inplace.reload_weights(vc, model, iter(weights[i % 2].items()), None, True)
    gc.collect()
    gc.freeze()
    for i in range(2 * n):
        arm = "AB"[(i + i // 2) % 2]  # A B B A A B B A ...: each arm after each equally often
        use(arm)
        cur["arm"] = arm
        times = {}
        for mode in ("off", "refill"):
            os.environ["DERIVGRAPH_VLLM_MODE"] = mode
            cur["on"] = mode == "refill"
            items = iter(weights[(i // 2) % 2].items())
            start = now()
            with torch.no_grad():
                inplace.reload_weights(vc, model, items, None, True)
            times[mode] = (now() - start) / 1e3
            cur["on"] = False
        T[arm]["on"].append(times["refill"])
        T[arm]["off"].append(times["off"])
        T[arm]["paired"].append(times["refill"] - times["off"])
    assert not session.plan_for(model).moved()


def q(v: list[float]) -> str:
    return (f"{min(v):8.1f} {statistics.quantiles(v, n=4)[0]:8.1f} "
            f"{statistics.median(v):8.1f}")


print(f"load {os.getloadavg()}, {n} plugin reloads per arm (thread CPU us: min q25 median)")
for label in ("on", "paired", "complete", "guard", "sweep"):
    a, b = T["A"][label], T["B"][label]
    size = len(a) // blocks
    lower = sum(statistics.median(b[k * size:(k + 1) * size])
                < statistics.median(a[k * size:(k + 1) * size]) for k in range(blocks))
    print(f"{label:9s} A {q(a)} | B {q(b)} | B-A median {statistics.median(b) - statistics.median(a):+7.1f}"
          f" q25 {statistics.quantiles(b, n=4)[0] - statistics.quantiles(a, n=4)[0]:+7.1f}"
          f" | B lower in {lower} of {blocks} blocks")
