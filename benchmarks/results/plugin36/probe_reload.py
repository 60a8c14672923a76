"""In-situ inclusive times (us, median over reloads) of the plugin's functions on the bench's
tiny Llama: every function listed below is wrapped with a perf_counter_ns probe.

    python3 benchmarks/results/plugin36/probe_reload.py [N]
"""

from __future__ import annotations

import gc
import importlib
import logging
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path.cwd()
os.environ["VLLM_TARGET_DEVICE"] = "cpu"
os.environ.setdefault("VLLM_PLUGINS", "derivgraph")
os.environ.setdefault("DERIVGRAPH_SPECS", str(ROOT / "tests" / "fixtures" / "vllm_llama.yaml"))
logging.basicConfig(level=logging.WARNING)
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402
from vllm.model_executor.model_loader.reload import inplace  # noqa: E402

torch.set_num_threads(1)
from tests.fixtures.vllm_llama_reload import checkpoint, cold_start, tiny_llama_vllm  # noqa: E402
from vllm_integration import session  # noqa: E402

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

times: dict[str, list[int]] = {}


def wrap(module: str, qual: str) -> None:
    mod = importlib.import_module(module)
    owner, name = (mod, qual) if "." not in qual else (getattr(mod, qual.split(".")[0]),
                                                       qual.split(".")[1])
    fn = owner.__dict__.get(name) if isinstance(owner, type) else getattr(owner, name, None)
    if fn is None:
        return
    label = f"{qual}"
    bucket = times.setdefault(label, [])
    now = time.perf_counter_ns

    def timed(*a, **k):
        t = now()
        try:
            return fn(*a, **k)
        finally:
            bucket.append(now() - t)

    setattr(owner, name, timed)


def wrap_dict(d, key):
    fn = d[key]
    bucket = times.setdefault("helper " + key, [])
    now = time.perf_counter_ns

    def timed(*a, **k):
        t = now()
        try:
            return fn(*a, **k)
        finally:
            bucket.append(now() - t)

    d[key] = timed


n = int(sys.argv[1]) if len(sys.argv) > 1 else 200
if os.environ.get("P36_COPY_TWICE"):  # an experiment: the marginal cost of one more foreach
    from derivgraph.runtime import engine as _engine
    _copy = _engine.Taken.copy

    def _twice(self):
        _copy(self)
        _copy(self)

    _engine.Taken.copy = _twice
if os.environ.get("P36_NO_WORDS"):  # an experiment: the exact address compare only
    import derivgraph.addresses as _addresses
    _addresses.addresses = lambda tensors, hold=True: None
with tempfile.TemporaryDirectory() as tmp, tiny_llama_vllm(Path(tmp)) as (mc, vc):
    weights = [checkpoint(0), checkpoint(1)]
    model = cold_start(mc, vc, weights[0], "")
    os.environ["DERIVGRAPH_VLLM_MODE"] = "refill"
    for line in TARGETS.strip().splitlines():
        module, *quals = line.split()
        for q in quals:
            wrap(module, q)
    plan = session.plan_for(model)
    for key in ("execute", "restore_storage", "pass_for", "set_scalars", "rebind",
                "take_engine_values"):
        wrap_dict(plan.bindings, key)
    for i in range(3):
        with torch.no_grad():
            inplace.reload_weights(vc, model, iter(weights[i % 2].items()), None, True)
    for v in times.values():
        v.clear()
    gc.collect()
    gc.freeze()
    for i in range(n):
        with torch.no_grad():
            inplace.reload_weights(vc, model, iter(weights[i % 2].items()), None, True)
for label, v in times.items():
    if v:
        print(f"{label:40s} calls/reload {len(v) / n:4.1f}  median {statistics.median(v) / 1e3:8.1f} us"
              f"  q10 {statistics.quantiles(v, n=10)[0] / 1e3:8.1f}")  # noqa: T201
