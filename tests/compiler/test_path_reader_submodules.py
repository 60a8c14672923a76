"""``PathReader.owners`` of paths none walked yet, all one hop from one module.

Where every path's last name is held by the parent module's ``_modules`` (what
``paths.step_into`` reads first), the reader takes them in C-level sweeps and keeps them as
walked; every answer is ``get_path``'s object, by identity, on the fast path and on each
case it refuses (a name held elsewhere or nowhere, a dunder, parents that differ, a parent
that is no module, a missing parent, a path walked before). Canary: the check that every
name is held in ``_modules`` dropped makes the mixed-registry case go red.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch import nn

from derivgraph.compiler.owners import PathReader
from derivgraph.paths import MISSING, get_path


class Leaf(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.ones(2), requires_grad=False)
        self.register_buffer("b", torch.zeros(2))
        self.note = "plain"


class Root(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.ModuleList(Leaf() for _ in range(6))
        self.extra = Leaf()
        self.table = {"0": Leaf(), "1": Leaf()}
        self.layers[2].__dict__["shadow"] = "in __dict__ only"


def _check(paths: list[str], fast: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    root = Root()
    reader = PathReader(root)
    walked: list[str] = []
    real = PathReader.get

    def counting(self: PathReader, path: str) -> Any:
        walked.append(path)
        return real(self, path)

    monkeypatch.setattr(PathReader, "get", counting)
    got = reader.owners(paths)
    want = [get_path(root, p) for p in paths]
    assert len(got) == len(want)
    assert all(a is b for a, b in zip(got, want)), (got, want)
    assert (not set(paths) & set(walked)) is fast  # the fast path walks none of them
    walked.clear()
    again = reader.owners(paths)  # kept as walked: read from the reader's cache
    assert all(a is b for a, b in zip(again, want)) and not walked


@pytest.mark.parametrize("paths", [
    [f"layers.{i}" for i in range(6)],
    ["layers.3", "layers.1", "layers.3"],
    ["extra", "layers"],  # from the root
])
def test_submodules_of_one_module_are_read_at_once(monkeypatch: pytest.MonkeyPatch,
                                                   paths: list[str]) -> None:
    _check(paths, True, monkeypatch)


@pytest.mark.parametrize("paths", [
    ["layers.0.w", "layers.0.b"],  # parameters and buffers: not in _modules
    ["layers.0", "layers.9"],  # one held nowhere
    ["layers.2", "layers.2.shadow"],  # parents that differ
    ["extra.note", "extra.w"],
    ["extra.__dict__", "extra.w"],  # a dunder
    ["table.0", "table.1"],  # the parent is no module
    ["nothing.0", "nothing.1"],  # the parent is missing
    ["layers.0", "layers.1", "extra"],
])
def test_anything_else_is_walked_path_by_path(monkeypatch: pytest.MonkeyPatch,
                                              paths: list[str]) -> None:
    _check(paths, False, monkeypatch)


def test_paths_walked_before_are_not_read_again() -> None:
    root = Root()
    reader = PathReader(root)
    first = reader.owner("layers.1")
    got = reader.owners(["layers.0", "layers.1"])
    assert got[1] is first and got[0] is root.layers[0]
    assert reader.owner("nothing.0") is MISSING
