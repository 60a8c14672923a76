"""``Stacks.later``: the rows after a row of its spec and module class, in order, each with a
module path; the groups are found once, by identity sweeps where every row has the first row's
key, else row by row. Compared with the rule written out per row. Canaries (see the helper's
NOTES): the one-group shortcut taken for any keys; rows without a module path kept."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from derivgraph.compiler.stamp_columns import Stacks


class _A:
    pass


class _B:
    pass


def _later(bounds: list[Any], at: int) -> list[int]:
    """The rule, row by row."""
    key = (id(bounds[at].spec), type(bounds[at].module))
    return [i for i in range(at + 1, len(bounds))
            if (id(bounds[i].spec), type(bounds[i].module)) == key and bounds[i].module_path]


def _bound(spec: object, cls: type, path: str) -> Any:
    return SimpleNamespace(spec=spec, module=cls(), module_path=path)


one, two = object(), object()


@pytest.mark.parametrize("bounds", [
    [_bound(one, _A, f"l.{i}") for i in range(6)],  # one group
    [_bound(one, _A, "" if i == 3 else f"l.{i}") for i in range(6)],  # a row without a path
    [_bound(one if i % 2 else two, _A, f"l.{i}") for i in range(6)],  # two specs
    [_bound(one, _A if i < 4 else _B, f"l.{i}") for i in range(6)],  # two classes
    [_bound(one, _A, "l.0")],
])
def test_later_is_the_rule(bounds: list[Any]) -> None:
    stacks = Stacks(bounds)
    for at in range(len(bounds)):
        assert stacks.later(at) == _later(bounds, at)
