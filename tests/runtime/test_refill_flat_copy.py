"""The refill's flat copy (:mod:`derivgraph.runtime.flat_copy`): runs of many small CPU
targets of one dtype and shape are copied by one ``cat`` and one row assignment at their
startup addresses, bit for bit what ``_foreach_copy_`` writes. The canary rotates the
addresses: the planted bug goes red."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from derivgraph import compile_plan
from derivgraph.compiler import flat
from derivgraph.runtime import engine
from derivgraph.runtime.flat_copy import _flat_copy, flat_runs
from derivgraph.tools.deepseek_workload import DeepseekModel, deepseek_specs

LAYERS = flat.MIN_GROUP + 3  # every per-layer target a flat run


def _refilled(seed: int) -> tuple[DeepseekModel, object, dict[str, torch.Tensor]]:
    """A plan over the deepseek workload, refilled once, then the engine's fresh values of
    ``seed`` (cloned) left at the holders."""
    model = DeepseekModel("cpu", 1 / 256, layers=LAYERS, experts=16)
    model.reload(0)
    model.post_load()
    plan = compile_plan(model, deepseek_specs())
    plan.refill()
    model.reload(seed)
    model.post_load()
    fresh = {}
    for key in plan.entries:
        owner, _, name = key.rpartition(".")
        fresh[key] = getattr(model.get_submodule(owner), name).clone()
    return model, plan, fresh


def _wrong(plan: object, fresh: dict[str, torch.Tensor]) -> list[str]:
    return [k for k, e in plan.entries.items() if not torch.equal(e.storage, fresh[k])]


@pytest.mark.parametrize("flat_copies", [True, False])
def test_the_refill_copies_every_fresh_value_bit_exact(flat_copies, monkeypatch):
    if not flat_copies:
        monkeypatch.setattr(engine, "flat_runs",
                            lambda ours, layouts=None, records=None, ptrs=None, held=None: [])
    model, plan, fresh = _refilled(3)
    report = plan.refill(verify=True)
    table = plan._refill_table
    assert bool(table.flat) == flat_copies
    covered = sum(b - a for a, b, _ in table.flat) + sum(b - a for a, b in table.rest_spans)
    assert covered == len(table.ids) == len(plan.entries)
    assert report.moved == [] and report.taken_from_engine == len(plan.entries)
    assert _wrong(plan, fresh) == []


def test_canary_addresses_rotated_by_one_write_wrong_values():
    model, plan, fresh = _refilled(3)
    plan.refill()  # builds the table with its flat runs
    run = plan._refill_table.flat[0][2]
    run.starts = np.roll(run.starts, 1)  # the planted bug
    model.reload(5)
    model.post_load()
    fresh = {k: getattr(model.get_submodule(k.rpartition(".")[0]), k.rpartition(".")[2]).clone()
             for k in plan.entries}
    plan.refill()
    assert _wrong(plan, fresh) != []


def test_runs_are_cut_at_the_grain_size_and_keep_small_groups_and_others_out():
    small = [torch.zeros(256) for _ in range(280)]
    runs = flat_runs(small)
    assert [(a, b) for a, b, _ in runs] == [(0, 128), (128, 256)]  # the 24 left: foreach
    assert all(r.buf.numel() <= flat.MAX_ELEMENTS for *_, r in runs)
    assert flat_runs([torch.zeros(()) for _ in range(64)]) == []  # 0-dim: no cat
    assert flat_runs([torch.zeros(flat.MAX_MEAN + 1) for _ in range(64)]) == []  # large
    assert flat_runs([torch.zeros(4, dtype=torch.complex64) for _ in range(64)]) == []
    mixed = [torch.zeros(4) for _ in range(40)] + [torch.zeros(5) for _ in range(40)]
    assert [(a, b) for a, b, _ in flat_runs(mixed)] == [(0, 40), (40, 80)]


def test_overlapping_targets_keep_the_foreach_order():
    base = torch.zeros(64)
    assert _flat_copy([base[i:i + 2] for i in range(40)]) is None
    ours = [torch.zeros(3) for _ in range(40)]
    assert _flat_copy([t.t() for t in [torch.zeros(3, 2) for _ in range(40)]]) is None
    copy = _flat_copy(ours)
    assert copy is not None
    theirs = [torch.arange(3.0) + i for i in range(40)]
    copy.copy([t.expand(2, 3)[1] for t in theirs])  # strided fresh values read as they are
    assert all(torch.equal(o, t) for o, t in zip(ours, theirs))
