"""Fixtures of the runtime tests."""

from __future__ import annotations

import pytest

from derivgraph.runtime import engine
from derivgraph.runtime.holders import Holders


@pytest.fixture()
def per_entry_spy(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Records every per-entry holder walk (fresh-value reads and re-binds), by entry id."""
    calls: list[str] = []
    value, rebind_entries = engine.engine_value, Holders.rebind_entries

    def spy_value(model, entry, owners=None):  # noqa: ANN001, ANN202
        calls.append(entry.id)
        return value(model, entry, owners)

    def spy_rebind(self, entries, report=None, known=None):  # noqa: ANN001, ANN202
        entries = list(entries)
        calls.extend(e.id for e in entries)
        return rebind_entries(self, entries, report, known)

    monkeypatch.setattr(engine, "engine_value", spy_value)
    monkeypatch.setattr(Holders, "rebind_entries", spy_rebind)
    return calls
