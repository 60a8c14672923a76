"""The derived tensors shape inference checks itself while stamped rows are deferred
(``infer._Stamped.unstamped``): the keys around each table's leading derived tensors where
those are one stretch of the derived order, else one sweep of the rows' map
(``_Stamped.derived``, made on first read). Either way the answer is the sweep's: every
derived id no row leads with, in order. Canaries (see the helper's NOTES): the stretch not
compared (only its first id found); the cut taken from the wrong end of a stretch."""

from __future__ import annotations

from itertools import filterfalse

import pytest

from derivgraph.compiler import infer
from derivgraph.compiler.instances import InstanceTable
from derivgraph.planner import compile_plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec


def _stamped(tables: list[tuple[tuple[str, ...], list[tuple[str, ...]], int]]) -> infer._Stamped:
    out = infer._Stamped()
    for template, rows, k in tables:
        out.tables.append(InstanceTable(template, rows))
        out.leading[template] = k
    return out


def _swept(out: infer._Stamped, derived: dict[str, int]) -> list[str]:
    """The answer by the sweep (a fresh ``_Stamped`` of the same tables, its map read)."""
    again = _stamped([(t.template, t.rows, out.leading[t.template]) for t in out.tables])
    return list(filterfalse(again.derived.__contains__, derived))


def _derived(*ids: str) -> dict[str, int]:
    return dict.fromkeys(ids, 0)


@pytest.mark.parametrize(("order", "cut"), [
    # template row, then the rows (one stretch), then another tensor
    (("t.a", "t.b", "r1.a", "r1.b", "r2.a", "r2.b", "x"), True),
    # the rows at the very end, and at the very start
    (("t.a", "t.b", "r1.a", "r1.b", "r2.a", "r2.b"), True),
    (("r1.a", "r1.b", "r2.a", "r2.b", "t.a", "t.b"), True),
    # the rows' tensors not one stretch (interleaved with another)
    (("t.a", "t.b", "r1.a", "x", "r1.b", "r2.a", "r2.b"), False),
    # the rows in another order than the table's
    (("t.a", "t.b", "r2.a", "r2.b", "r1.a", "r1.b", "x"), False),
    # a row's tensor missing from the order, or its first one
    (("t.a", "t.b", "r1.a", "r1.b", "r2.a", "x"), False),
    (("t.a", "t.b", "r1.b", "r2.a", "r2.b", "x"), False),
])
def test_one_table_as_the_sweep(order: tuple[str, ...], cut: bool) -> None:
    out = _stamped([(("t.a", "t.b", "%1:op"), [("r1.a", "r1.b", "%2:op"),
                                               ("r2.a", "r2.b", "%3:op")], 2)])
    derived = _derived(*order)
    got = out.unstamped(derived)
    assert got == _swept(out, derived)
    assert (out._derived is None) is cut


def test_the_stretch_is_cut_without_the_map() -> None:
    out = _stamped([(("t.a", "t.b", "%1:op"), [("r1.a", "r1.b", "%2:op"),
                                               ("r2.a", "r2.b", "%3:op")], 2)])
    derived = _derived("t.a", "t.b", "r1.a", "r1.b", "r2.a", "r2.b", "x")
    assert out.unstamped(derived) == ["t.a", "t.b", "x"]
    assert out._derived is None  # no per-row map made


def test_several_tables() -> None:
    first = (("t.a",), [("r1.a",), ("r2.a",)], 1)
    second = (("u.a", "u.b"), [("s1.a", "s1.b"), ("s2.a", "s2.b")], 1)  # one leading
    empty = (("v.a",), [], 1)
    for order in [("t.a", "r1.a", "r2.a", "u.a", "u.b", "s1.a", "s1.b", "s2.a", "s2.b"),
                  ("u.a", "s1.a", "s2.a", "t.a", "r1.a", "r2.a", "s1.b", "s2.b", "u.b")]:
        out = _stamped([first, empty, second])
        derived = _derived(*order)
        assert out.unstamped(derived) == _swept(out, derived)
    out = _stamped([first, second])
    derived = _derived("u.a", "s1.a", "s2.a", "t.a", "r1.a", "r2.a", "s1.b", "s2.b", "u.b")
    assert out.unstamped(derived) == ["u.a", "t.a", "s1.b", "s2.b", "u.b"]
    assert out._derived is None


def test_overlapping_tables_are_swept() -> None:
    out = _stamped([(("t.a",), [("r1.a",), ("r2.a",)], 1), (("u.a",), [("r2.a",)], 1)])
    derived = _derived("t.a", "r1.a", "r2.a", "u.a")
    assert out.unstamped(derived) == ["t.a", "u.a"] == _swept(out, derived)
    assert out.templates() == {"t.a", "u.a"}
    out = _stamped([(("t.a",), [("r1.a",), ("r2.a",), ("r3.a",)], 1), (("u.a",), [("r2.a",)], 1)])
    derived = _derived("t.a", "r1.a", "r2.a", "r3.a", "u.a")  # one stretch inside the other
    assert out.unstamped(derived) == ["t.a", "u.a"] == _swept(out, derived)


def test_templates_are_the_maps_values() -> None:
    out = _stamped([(("t.a", "t.b", "%1"), [("r1.a", "r1.b", "%2")], 2),
                    (("v.a",), [], 1)])
    assert out.templates() == set(out.derived.values()) == {"t.a", "t.b"}


def test_the_scaling_compile_cuts_its_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    """The stamped compile's deferred check takes the cut (no per-row map), and its answer
    is the sweep's."""
    seen: list[tuple[list[str], list[str], bool]] = []
    unstamped = infer._Stamped.unstamped

    def spy(self: infer._Stamped, derived: dict[str, object]) -> list[str]:
        got = unstamped(self, derived)
        seen.append((got, _swept(self, derived), self._derived is None))
        return got

    monkeypatch.setattr(infer._Stamped, "unstamped", spy)
    plan = compile_plan(scaling_model(40), [scaling_spec()])
    assert plan.graph.stamped == 39
    (got, want, cut), = seen
    assert got == want == ["layers.0.inv", "layers.0.prod", "layers.0.strides",
                           "layers.0.scale_alias"] and cut
