"""The scan pauses the automatic cyclic collector (a speed path): same report, state restored."""

from __future__ import annotations

import contextlib
import gc
import shutil

import pytest

import derivgraph.audit.static.scan as scan_module
from derivgraph.audit.static.report import render_json
from derivgraph.audit.static.scan import scan, young_collections_only
from tests.audit.static.expectations import CORPUS


def _report_text(tree, jobs: int) -> str:
    return render_json(scan([tree], specs=[], jobs=jobs))


@pytest.mark.parametrize("jobs", [1, 2])
def test_paused_collector_gives_the_byte_identical_report(tmp_path, monkeypatch, jobs):
    for i in range(20):  # enough files for two worker processes
        shutil.copy(CORPUS / "quant_method.py", tmp_path / f"m{i:02d}.py")
    shutil.copytree(CORPUS, tmp_path / "corpus")
    paused = _report_text(tmp_path, jobs)
    monkeypatch.setattr(scan_module, "young_collections_only", contextlib.nullcontext)
    assert gc.isenabled()
    plain = _report_text(tmp_path, jobs)
    assert len(paused) > 10_000
    assert paused == plain


def test_identity_check_goes_red_on_a_planted_divergence(tmp_path, monkeypatch):
    """Canary: the comparison above sees a one-site difference in the audit's output."""
    shutil.copytree(CORPUS, tmp_path / "corpus")
    paused = _report_text(tmp_path, 1)
    real = scan_module.audit_module

    def drop_last_site(*args, **kwargs):
        sites, externals, reach = real(*args, **kwargs)
        return sites[:-1], externals, reach

    monkeypatch.setattr(scan_module, "young_collections_only", contextlib.nullcontext)
    monkeypatch.setattr(scan_module, "audit_module", drop_last_site)
    assert _report_text(tmp_path, 1) != paused


def test_collector_state_is_restored_and_paused_inside():
    seen = []
    assert gc.isenabled()
    with young_collections_only():
        seen.append(gc.isenabled())
    assert seen == [False] and gc.isenabled()
    gc.disable()
    try:
        with young_collections_only():
            pass
        assert not gc.isenabled()  # a caller that had it off keeps it off
    finally:
        gc.enable()
    with pytest.raises(RuntimeError), young_collections_only():
        raise RuntimeError("boom")
    assert gc.isenabled()


def _middle_generation_after_the_pause() -> int:
    """How many objects the middle generation holds just after a pause in which 5000
    objects survived a ``collect(0)`` (as the survivors of each audit do)."""
    gc.collect()
    with young_collections_only():
        kept = [[k] for k in range(5000)]
        gc.collect(0)
        assert len(gc.get_objects(generation=1)) >= 5000
    middle = len(gc.get_objects(generation=1))
    assert len(kept) == 5000
    return middle


def test_survivors_are_promoted_to_the_oldest_generation_unwalked():
    """The next automatic collection (of the middle generation, its count being high after
    the pause) then walks none of them."""
    assert _middle_generation_after_the_pause() < 100
    assert gc.get_freeze_count() == 0


def test_survivors_without_promotion_stay_in_the_middle_generation(monkeypatch):
    """Canary: without :func:`promote_survivors` they wait there for that collection."""
    monkeypatch.setattr(scan_module, "promote_survivors", lambda: None)
    assert _middle_generation_after_the_pause() >= 5000


def test_a_callers_frozen_objects_stay_frozen():
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        assert frozen > 0
        with young_collections_only():
            pass
        assert gc.get_freeze_count() == frozen  # nothing thawed into the oldest generation
    finally:
        gc.unfreeze()
