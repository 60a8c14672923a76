"""Every guard test runs with the dict version tags and the raw-word item proofs (where the
interpreter proves them), with the tags but every moved dict's items read by key, and with the
tags forced off (the sweeps of every container): all must give the same verdicts."""

from __future__ import annotations

import pytest

from derivgraph import dict_slots, dict_versions


@pytest.fixture(autouse=True, params=["tags", "tags-no-slots", "no-tags"])
def version_tags(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    """Whether the guard's sweep may use the dict version tags in this test."""
    if request.param == "no-tags":
        monkeypatch.setattr(dict_versions, "AVAILABLE", False)
    if request.param != "tags":
        monkeypatch.setattr(dict_slots, "AVAILABLE", False)
    return dict_versions.AVAILABLE
