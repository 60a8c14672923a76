"""Every guard test runs four ways: every dict item proven by its raw words on every sweep
(``whole``, where the interpreter proves them), the dict version tags with the raw-word proofs of
the moved dicts' items (``tags``), the tags with every moved dict's items read by key
(``tags-no-slots``), and with both forced off (the sweeps of every container): all must give the
same verdicts."""

from __future__ import annotations

import pytest

from derivgraph import dict_slots, dict_versions
from derivgraph.guard import sweep


@pytest.fixture(autouse=True, params=["whole", "tags", "tags-no-slots", "no-tags"])
def version_tags(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    """Whether the guard's sweep may use the dict version tags in this test (``whole``: not
    where the raw words prove every item, which is what each sweep reads then)."""
    if request.param == "no-tags":
        monkeypatch.setattr(dict_versions, "AVAILABLE", False)
    if request.param in ("tags-no-slots", "no-tags"):
        monkeypatch.setattr(dict_slots, "AVAILABLE", False)
    if request.param != "whole":
        monkeypatch.setattr(sweep, "WHOLE_ITEMS", 0)
    elif dict_slots.AVAILABLE:
        return False
    return dict_versions.AVAILABLE
