"""Every guard test runs with the dict version tags (where the interpreter proves them) and with
them forced off (the sweeps of every container): both must give the same verdicts."""

from __future__ import annotations

import pytest

from derivgraph import dict_versions


@pytest.fixture(autouse=True, params=["tags", "no-tags"])
def version_tags(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    """Whether the guard's sweep may use the dict version tags in this test."""
    if request.param == "no-tags":
        monkeypatch.setattr(dict_versions, "AVAILABLE", False)
    return dict_versions.AVAILABLE
