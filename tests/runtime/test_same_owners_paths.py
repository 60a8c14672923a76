"""``accessors.same_owners`` (a column's owner paths and owners are the last column's, row by
row) compares two lists of paths by one list comparison (a row's very string equal without a
character read) and the owners by identity: its answer must be the reference sweeps' for
equal paths made apart, one path differing at the first, a middle or the last row, lengths
differing, tuples, and owners equal but not the very objects.

Canary (run by hand, red): the path comparison planted to compare lengths alone."""

from __future__ import annotations

import operator
from typing import Any

import pytest

from derivgraph.runtime.accessors import same_owners

N = 50


class _Equal:
    """An owner equal to every object (``==``) that is none of them (``is``)."""

    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = object.__hash__


def _reference(paths: Any, owners: Any, last: Any) -> bool:
    return len(paths) == len(last[0]) and all(map(operator.eq, paths, last[0])) \
        and all(map(operator.is_, owners, last[1]))


def _apart(paths: list[str]) -> list[str]:
    return ["".join([p[:3], p[3:]]) for p in paths]  # equal strings, other objects


_PATHS = [f"layers.{i}" for i in range(N)]
_OWNERS = [object() for _ in range(N)]


def _case(name: str) -> tuple[Any, Any]:
    paths, owners = list(_PATHS), list(_OWNERS)
    if name == "apart":
        paths = _apart(paths)
    elif name.startswith("path-"):
        paths[{"first": 0, "middle": N // 2, "last": N - 1}[name[5:]]] = "layers.x"
    elif name == "shorter":
        paths, owners = paths[:-1], owners[:-1]
    elif name == "tuple":
        paths = tuple(_apart(paths))
    elif name == "owner-equal":
        owners[N // 2] = _Equal()
    elif name == "very-lists":
        paths, owners = _PATHS, _OWNERS
    return paths, owners


@pytest.mark.parametrize("name", ["same", "apart", "path-first", "path-middle", "path-last",
                                  "shorter", "tuple", "owner-equal", "very-lists"])
def test_same_owners_answers_as_the_sweeps(name: str) -> None:
    paths, owners = _case(name)
    last = (_PATHS, _OWNERS, [None] * N)
    want = _reference(paths, owners, last)
    assert want is (name in ("same", "apart", "tuple", "very-lists"))
    assert same_owners(paths, owners, last) is want
