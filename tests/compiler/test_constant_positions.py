"""``planner._constant_entries`` with the compile's order: the constant entries put at their
positions (``planner._at_positions``) instead of the entries filtered by a set of them.

``_lower`` is handed the compile's ``ids`` (the entries' ids in order) and the positions of
the generic entries; the source-free columns' rows are marked at the evenly spaced positions
holding them (``adoption.span_of``), the generic constants at theirs. Asserted equal to the
filter (the rule, ``order=None``) on the stamped compile of the scaling spec (the template's
generic constant before its column's rows), and the rule's path taken wherever the positions
do not prove the answer (a model with another layer's entries between a column's rows, rows
not evenly spaced, an id at no generic position, an order of another length). Canaries: the
generic constants not marked, a column's rows marked without the slice compared, or an order
of another length taken turn tests here red (``benchmarks/results/alloc66/canary.py``).
"""

from __future__ import annotations

from typing import Any

import pytest

from derivgraph import planner
from derivgraph.compiler.stamp import stamping
from derivgraph.runtime.entry_columns import EntryColumn
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
from tests.compiler.test_constant_entries_by_column import _mixed, _other_spec

LAYERS = 9


def _compile(mixed: bool, monkeypatch: pytest.MonkeyPatch | None = None,
             ) -> tuple[Any, list[Any]]:
    """A stamped compile; the orders ``_constant_entries`` was handed and its answers."""
    seen: list[Any] = []
    if monkeypatch is not None:
        real = planner._constant_entries

        def spy(plan: Any, deps: Any, order: Any = None) -> list[str]:
            seen.append((order, real(plan, deps, order)))
            return seen[-1][1]

        monkeypatch.setattr(planner, "_constant_entries", spy)
    with stamping(True):
        if mixed:
            return planner.compile_plan(_mixed(LAYERS), [scaling_spec(), _other_spec()]), seen
        return planner.compile_plan(scaling_model(LAYERS), [scaling_spec()]), seen


def _free(plan: Any) -> tuple[list[str], list[EntryColumn]]:
    deps = plan.graph.source_deps()
    generic = planner._constants_of(plan.entries.generic.items(), deps)
    return generic, [c for c in plan.entries.columns
                     if isinstance(c, EntryColumn) and not deps[c.template]]


def _order(plan: Any) -> tuple[list[str], list[int]]:
    ids = list(plan.entries)
    return ids, [ids.index(n) for n in plan.entries.generic]


@pytest.mark.parametrize("mixed", [False, True], ids=["scaling", "mixed"])
def test_the_compile_puts_the_constants_at_their_positions(
        monkeypatch: pytest.MonkeyPatch, mixed: bool) -> None:
    placed: list[Any] = []
    real = planner._at_positions
    monkeypatch.setattr(planner, "_at_positions", lambda *a: placed.append(real(*a)) or placed[-1])
    plan, seen = _compile(mixed, monkeypatch)
    (order, answer), = seen
    assert order is not None and order[0] == list(plan.entries)  # the entries' ids, in order
    # the scaling rows are evenly spaced in the order; the other layer's entries break the
    # spacing of the rows around them: refused, the rule answers
    assert placed == ([None] if mixed else [answer])
    deps = plan.graph.source_deps()
    assert answer == planner._constant_entries(plan, deps)  # the rule: the filter
    assert answer == planner._constants_of(plan.entries.items(), deps)  # every entry swept
    generic, free = _free(plan)
    assert len(answer) == len(generic) + sum(map(len, free)) >= LAYERS
    if mixed:  # the other layer's constant between two rows of the strides column
        at = next(i for i, n in enumerate(answer) if n.endswith(".ones"))
        assert 0 < at < len(answer) - 1


@pytest.mark.parametrize("drop", [[1], [0, 2, 4, 6], [7], [0]],
                         ids=["one-row", "every-other-row", "last-row", "first-row"])
def test_rows_left_out_are_placed_or_refused(drop: list[int]) -> None:
    """A column's rows with some left out: evenly spaced still (every other row, the first
    or the last left out) they are placed; otherwise the positions refuse (None)."""
    plan, _ = _compile(False)
    generic, (column,) = _free(plan)
    rows = [n for i, n in enumerate(column.ids) if i not in drop]
    answer = planner._at_positions(_order(plan), plan.entries, generic, [rows])
    kept = set(generic) | set(rows)
    rule = [n for n in plan.entries if n in kept]
    spaced = drop != [1]
    assert answer == (rule if spaced else None)


def test_an_id_at_no_position_or_another_order_is_refused() -> None:
    plan, _ = _compile(False)
    generic, free = _free(plan)
    rows = [list(c.ids) for c in free]
    ids, at = _order(plan)
    assert planner._at_positions((ids, at), plan.entries, generic, rows) is not None
    assert planner._at_positions((ids, at), plan.entries, [*generic, rows[0][0]], rows) is None
    assert planner._at_positions((ids[:-1], at), plan.entries, generic, rows) is None
    assert planner._at_positions((ids, at[:-1]), plan.entries, generic, rows) is None
    assert planner._at_positions((ids, at), plan.entries, generic, [[*rows[0], ids[0]]]) is None
