"""Adoption's columns share what the last column read (``adoption_columns.Reading``): a
column over the same owner paths takes the very list of the objects read then (shared,
read only), which are the objects the reader answers again; other paths are read."""

from __future__ import annotations

from typing import Any

import pytest
from torch import nn

from derivgraph.adoption_columns import Reading
from derivgraph.compiler.owners import PathReader


def _model() -> nn.Module:
    model = nn.Module()
    model.layers = nn.ModuleList(nn.Module() for _ in range(4))
    model.head = nn.Module()
    model.head.inner = nn.Module()
    return model


class _Counting(PathReader):
    def __init__(self, root: Any):
        super().__init__(root)
        self.asked: list[list[str]] = []

    def owners(self, owner_paths: list[str]) -> list[Any]:
        self.asked.append(list(owner_paths))
        return super().owners(owner_paths)


_PATHS = [f"layers.{i}" for i in range(4)]


@pytest.mark.parametrize("second", [
    _PATHS, list(_PATHS), [f"layers.{i}" for i in range(4)], _PATHS[:3], _PATHS[::-1],
    ["head.inner", *_PATHS[1:]], [*_PATHS, "head"], []])
def test_the_owners_are_the_reader_s(second: list[str]) -> None:
    model = _model()
    reader, fresh = _Counting(model), PathReader(model)
    read = Reading()
    first = read.owners(reader, _PATHS)
    again = read.owners(reader, second)
    assert all(map(lambda a, b: a is b, first, fresh.owners(_PATHS)))
    assert len(again) == len(second) and all(map(lambda a, b: a is b, again, fresh.owners(second)))
    # the same paths: the very list read then (shared by the table's columns, read only: a
    # copy per column would be one more young list for the collector, objects83); other
    # paths: another reading
    assert (again is first) == (second == _PATHS)
    # the same paths (equal strings) are not asked of the reader again
    assert reader.asked == ([_PATHS] if second == _PATHS else [_PATHS, second])


def test_the_module_owners_are_shared_over_the_same_objects() -> None:
    model = _model()
    read = Reading()
    found = read.owners(PathReader(model), _PATHS)
    one = read.module_owners(found)
    assert read.module_owners(list(found)) is one
    assert read.module_owners(found[:3]) is not one
