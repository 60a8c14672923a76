"""What a compiled plan declares, in the form an audit finding is classified against.

A finding is *declared* when a plan covers the tensor it is about: its path (or one of its
alias paths) is a declared path, or the tensor object is one the plan holds (its startup
storage) or one that now sits at a declared path. Paths are compared in the plan's dotted
form: a census path ``x.consts[0]`` is ``x.consts.0`` and ``x.d['k']`` is ``x.d.k``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import torch

from derivgraph.paths import MISSING, get_path

__all__ = ["DeclaredSet", "plan_path"]

_INDEX = re.compile(r"\[(\d+)\]")
_KEY = re.compile(r"\['([A-Za-z_][A-Za-z0-9_]*)'\]")


def plan_path(census_path: str) -> str:
    """A census path in the plan's dotted path grammar (``a[0]['k']`` -> ``a.0.k``)."""
    return _KEY.sub(r".\1", _INDEX.sub(r".\1", census_path))


@dataclass
class DeclaredSet:
    """Declared derived-tensor paths and objects of one plan, taken at one moment."""

    paths: frozenset[str] = frozenset()
    object_ids: frozenset[int] = frozenset()
    scalars: frozenset[str] = frozenset()
    _alive: list[Any] = field(default_factory=list, repr=False)  # keeps ids unique

    def __len__(self) -> int:
        return len(self.paths)

    @classmethod
    def from_plan(cls, plan: Any) -> DeclaredSet:
        """Read ``plan.declared()`` and what sits at each declared path now (reads only)."""
        declared: dict[str, Any] = plan.declared()
        alive: list[Any] = []
        scalars = set()
        for path, startup in declared.items():
            if isinstance(startup, torch.Tensor):
                alive.append(startup)
            else:
                scalars.add(path)
            current = get_path(plan.model, path)
            if current is not MISSING and isinstance(current, torch.Tensor):
                alive.append(current)
        return cls(frozenset(declared), frozenset(id(t) for t in alive), frozenset(scalars),
                   alive)

    @classmethod
    def empty(cls) -> DeclaredSet:
        return cls()

    def covers(self, paths: Iterable[str], objects: Iterable[Any] = ()) -> bool:
        """True if any of ``paths`` is declared or any of ``objects`` is a declared tensor."""
        if any(plan_path(p) in self.paths for p in paths):
            return True
        return any(o is not None and id(o) in self.object_ids for o in objects)

    def declared_path(self, paths: Iterable[str]) -> str | None:
        """The first of ``paths`` that is itself declared, if any."""
        return next((p for p in paths if plan_path(p) in self.paths), None)
