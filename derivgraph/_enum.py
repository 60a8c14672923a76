"""``StrEnum`` for Python 3.10 (``enum.StrEnum`` arrived in 3.11)."""

from __future__ import annotations

from enum import Enum

__all__ = ["StrEnum"]


class StrEnum(str, Enum):
    """A ``str`` enum that prints and formats as its value (``alias``, not ``TensorKind.ALIAS``)."""

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)
