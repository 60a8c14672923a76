"""``instances._values``: the value (``input``) of each derived tensor of a row column, None
for an id that is no derived tensor, found by identity tests (no derived node's ``__eq__``
runs: a dataclass ``__eq__`` per row is what the column sweep avoids). Canary: the
all-present branch taken for a column with a missing id fails ``test_missing_id_is_none``."""

from __future__ import annotations

from typing import Any

from derivgraph.compiler.instances import _values


class _Node:
    def __init__(self, value: str | None) -> None:
        self.input = value

    def __eq__(self, other: Any) -> bool:
        raise AssertionError("a derived node compared by ==")

    __hash__ = object.__hash__


def test_values_by_identity() -> None:
    derived = {"a": _Node("x"), "b": _Node(None)}
    assert _values(("a", "b"), derived) == ["x", None]


def test_missing_id_is_none() -> None:
    derived = {"a": _Node("x"), "c": _Node("y")}
    assert _values(("a", "missing", "c"), derived) == ["x", None, "y"]
