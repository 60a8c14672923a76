"""A run of layers replayed by columns (``Stamper._replay_run``): ``Stamper.resolve_layers``
calls ``resolve_bound`` only on the rows a run's replay did not already resolve (those on
which it returns at once), and the graph is the one a call per row leaves; the run's derived
tensors and their ids by column are handed over from ``build._derived_columns``
(``Stamper.run_columns``) instead of made again from the rows, and the graph is the one the
rows' own columns give. Canaries (see the helper's NOTES): the loop skipping one row past a
run; the id columns handed over in another order."""

from __future__ import annotations

from typing import Any

import pytest
from torch import nn

from derivgraph.compiler import build
from derivgraph.compiler.bind import match_specs
from derivgraph.compiler.stamp import Stamper, stamping
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

from .test_stamp_columns import _device_model, _device_spec, _graph_record, _taken_spec

_resolve_bound = Stamper.resolve_bound
_replay_run = Stamper._replay_run


def _record(graph: Any) -> list[Any]:
    """:func:`_graph_record` with the stamped tables' rows, records and layouts."""
    tables = [(t.template, t.rows, t.prefixes, t.starts, t.layouts_hold)
              for t in graph.stamps]
    return [_graph_record(graph), tables]


def _cases() -> list[tuple[Any, list[Any]]]:
    # two stacks: two layer classes (each call makes its own), so two runs, one after
    # the other, the second's template right after the first run's last row
    return [(scaling_model(9), [scaling_spec()]),
            (scaling_model(7), [scaling_spec(), _taken_spec()]),
            (_device_model(), [_device_spec()]),
            (nn.Sequential(scaling_model(5), scaling_model(4)), [scaling_spec()])]


_IDS = ["scaling", "taken", "devices", "two-stacks"]


@pytest.mark.parametrize("case", range(4), ids=_IDS)
def test_each_row_not_replayed_is_resolved_once_and_the_graph_is_a_call_per_rows(
        case: int, monkeypatch: pytest.MonkeyPatch) -> None:
    model, specs = _cases()[case]
    calls: list[tuple[int | None, bool]] = []

    def counted(self: Stamper, *args: Any) -> None:
        at = args[3] if len(args) > 3 else None
        calls.append((at, at is not None and at < self._done_until))
        _resolve_bound(self, *args)

    def every_row(self: Stamper, layers: Any) -> None:
        for at, (bound, params, nodes) in enumerate(layers):
            self.resolve_bound(bound, params, nodes, at)

    with stamping(True), monkeypatch.context() as patch:
        patch.setattr(Stamper, "resolve_bound", counted)
        mine = _record(build.build_graph(model, match_specs(model, specs)))
        called = list(calls)
        calls.clear()
        patch.setattr(Stamper, "resolve_layers", every_row)
        rows = _record(build.build_graph(model, match_specs(model, specs)))
    assert mine == rows
    assert [at for at, _ in called] == [at for at, replayed in calls if not replayed]
    assert not any(replayed for _, replayed in called)
    if case == 0:  # the template, then a run of every later row, replayed at its first
        assert [at for at, _ in called] == [0, 1] and len(calls) == 9
    if case == 3:
        assert [at for at, _ in called] == [0, 1, 5, 6] and len(calls) == 9


@pytest.mark.parametrize("case", range(4), ids=_IDS)
def test_a_runs_handed_columns_give_the_graph_its_rows_give(
        case: int, monkeypatch: pytest.MonkeyPatch) -> None:
    model, specs = _cases()[case]
    held: list[bool] = []

    def spied(self: Stamper, template: Any, at: int, size: int) -> bool:
        columns = self.run_columns.get(at)
        if columns is not None:  # the handed columns are the rows' (held), in order
            nodes = self.nodes[at:at + size]
            assert all(row is nodes[0] for row in nodes) and nodes[0].columns == columns[0]
            assert columns[1] == [column.ids for column in columns[0]]
        held.append(columns is not None)
        return _replay_run(self, template, at, size)

    def unhanded(self: Stamper, template: Any, at: int, size: int) -> bool:
        self.run_columns = {}
        return _replay_run(self, template, at, size)

    with stamping(True), monkeypatch.context() as patch:
        patch.setattr(Stamper, "_replay_run", spied)
        mine = _record(build.build_graph(model, match_specs(model, specs)))
        patch.setattr(Stamper, "_replay_run", unhanded)
        rows = _record(build.build_graph(model, match_specs(model, specs)))
    assert mine == rows
    assert all(held) and len(held) == [1, 0, 0, 2][case]  # no one-key run
