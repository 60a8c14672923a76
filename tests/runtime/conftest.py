"""Fixtures of the runtime tests."""

from __future__ import annotations

import os
from typing import Any

import pytest

from derivgraph import dict_versions, planner
from derivgraph.compiler.owners import PathReader
from derivgraph.compiler.stamp import stamping
from derivgraph.runtime import engine, entry_columns, watch
from derivgraph.runtime.holders import Holders
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec


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


def fast_path_on_off(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch,
                     module: object, unproven: str) -> bool:
    """For a fixture parametrized ``[on, off]``: off makes ``module.AVAILABLE`` False (the exact
    fallback); on skips where the module's self-test did not prove its fast path."""
    if request.param.startswith("no-"):
        monkeypatch.setattr(module, "AVAILABLE", False)
        return False
    if not module.AVAILABLE:  # type: ignore[attr-defined]
        pytest.skip(unproven)
    return True


@pytest.fixture(params=["tags", "no-tags"])
def dict_tags(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    """Runs a test with the dicts' version tags proven (the checks answered by the tags), and
    again with them unavailable (every check a full sweep); the value says which. With the
    tags on, every table is watched, however small (:data:`~derivgraph.runtime.watch.MIN_WATCHED`
    is for speed only)."""
    on = fast_path_on_off(request, monkeypatch, dict_versions,
                          "no PEP 509 version tags on this interpreter")
    if on:
        monkeypatch.setattr(watch, "MIN_WATCHED", 0)
    return on


@pytest.fixture(autouse=True)
def _no_dict_tags_by_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """``DERIVGRAPH_TEST_NO_DICT_TAGS=1`` runs every runtime test with the tags unavailable."""
    if os.environ.get("DERIVGRAPH_TEST_NO_DICT_TAGS"):
        monkeypatch.setattr(dict_versions, "AVAILABLE", False)


def at_entry_columns(monkeypatch: pytest.MonkeyPatch, check: Any) -> None:
    """Compile a stamped 6-layer model, calling ``check(tables, planned, owners, proven)``
    where the compile calls ``entry_columns`` (nothing written to the model yet)."""
    real = entry_columns.entry_columns

    def at(tables: Any, planned: Any, owners: PathReader, proven: Any = ()) -> Any:
        check(tables, planned, owners, list(proven))
        return real(tables, planned, owners, proven)

    monkeypatch.setattr(planner, "entry_columns", at)
    with stamping(True):
        planner.compile_plan(scaling_model(6), [scaling_spec()])
