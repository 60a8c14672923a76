"""In-situ inclusive times (us, median and 10th percentile over reloads) of the plugin's
functions on the bench's tiny Llama: every function listed in ``TARGETS`` (and the plan's
helpers the generated refill calls) is wrapped with a ``perf_counter_ns`` probe.

    python3 benchmarks/results/plugin36/probe_reload.py [N]

Experiments (environment): ``P36_COPY_TWICE=1`` runs the refill's batched copy twice (the
marginal cost of one more ``_foreach_copy_``); ``P36_NO_WORDS=1`` makes every address check
compare the data addresses (no storage words).
"""

from __future__ import annotations

import gc
import importlib
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _tiny_llama import tiny_llama  # noqa: E402

TARGETS = """
vllm_integration.session _complete
vllm_integration.completion complete _run_plan
vllm_integration.guarding restore_guard check_folds
derivgraph.runtime.plan Plan.run Plan._take_engine_values Plan._take_batched Plan._set_scalars
derivgraph.runtime.plan Plan.rebind Plan._entry Plan._refill_table_now Plan._rest_for
derivgraph.runtime.holders Holders.sources_intact Holders.moved Holders.owners_current
derivgraph.runtime.holders Holders._sources_held Holders.rebind Holders.note_read
derivgraph.runtime.holders Holders.owners_current_for Holders._scalars_current
derivgraph.runtime.accessors HolderTable.current HolderTable.refresh HolderTable._stale
derivgraph.runtime.accessors HolderTable.changed
derivgraph.runtime.engine RefillTable.take Taken.copy Layouts.match
derivgraph.runtime.programs Programs.execute Programs.entry
derivgraph.runtime.storage BoundTensors.restore_storage BoundTensors.staged_if_changed
derivgraph.guard.guard Guard.restore Guard._plan_watched Guard._moved_storage Guard._report
derivgraph.guard.watch Watch.survey Watch._dirty
derivgraph.guard.sweep Sweep.dirty Sweep._compare Sweep.settle Sweep._lists
derivgraph.dict_versions DictVersions.changed DictVersions.adopt
derivgraph.addresses AtAddresses.intact
derivgraph.runtime.report RunReport.__init__
derivgraph.guard.report GuardReport.__init__
vllm_integration.completion LastReload.__init__ verify_specs_enabled
torch.autograd.grad_mode no_grad.__enter__ no_grad.__exit__
"""
HELPERS = ("execute", "restore_storage", "pass_for", "set_scalars", "rebind",
           "take_engine_values")

times: dict[str, list[int]] = {}


def _timed(fn: Callable[..., Any], label: str) -> Callable[..., Any]:
    bucket = times.setdefault(label, [])
    now = time.perf_counter_ns

    def timed(*a: Any, **k: Any) -> Any:
        start = now()
        try:
            return fn(*a, **k)
        finally:
            bucket.append(now() - start)

    return timed


def _wrap(module: str, qual: str) -> None:
    mod = importlib.import_module(module)
    owner, name = (mod, qual) if "." not in qual else (getattr(mod, qual.split(".")[0]),
                                                       qual.split(".")[1])
    fn = owner.__dict__.get(name) if isinstance(owner, type) else getattr(owner, name, None)
    if fn is not None:
        setattr(owner, name, _timed(fn, qual))


def _experiments() -> None:
    if os.environ.get("P36_COPY_TWICE"):
        from derivgraph.runtime import engine
        copy = engine.Taken.copy

        def twice(self: Any) -> None:
            copy(self)
            copy(self)

        engine.Taken.copy = twice
    if os.environ.get("P36_NO_WORDS"):
        import derivgraph.addresses as addresses
        addresses.addresses = lambda tensors, hold=True: None


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    with tiny_llama(warm=0) as (model, reload):
        _experiments()
        from vllm_integration import session
        for line in TARGETS.strip().splitlines():
            module, *quals = line.split()
            for qual in quals:
                _wrap(module, qual)
        bindings = session.plan_for(model).bindings
        for key in HELPERS:
            bindings[key] = _timed(bindings[key], "helper " + key)
        for i in range(3):
            reload(i)
        for values in times.values():
            values.clear()
        gc.collect()
        gc.freeze()
        for i in range(n):
            reload(i)
    for label, values in times.items():
        if values:
            print(f"{label:40s} calls/reload {len(values) / n:4.1f}  median "  # noqa: T201
                  f"{statistics.median(values) / 1e3:8.1f} us  q10 "
                  f"{statistics.quantiles(values, n=10)[0] / 1e3:8.1f}")


if __name__ == "__main__":
    main()
