"""What a guard snapshot or restore did: slots restored, copied only, or needing a recapture."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Change", "GuardReport", "SlotChange"]


class Change(enum.Enum):
    """What happened to one slot across a post-load step."""

    REBOUND = "rebound to a new tensor: value copied into the startup storage, holder re-pointed"
    STORAGE = "startup tensor pointed at new storage: value copied back, storage restored"
    WEIGHT_REPOINTED = "rebound to a copy of a weight: holder re-pointed at the weight"
    FIXED_HOLDER = "value copied into the startup storage; holder cannot be re-pointed"
    LAYOUT = "shape, dtype, strides or device changed"
    DISAPPEARED = "disappeared"
    NEW = "new tensor"
    WEIGHT = "aliases a weight and changed: not written"
    CONFLICT = "one new tensor replaced two startup tensors"

    @property
    def recapture(self) -> bool:
        """Whether a captured graph must be recaptured after this change."""
        return self in (Change.LAYOUT, Change.DISAPPEARED, Change.NEW, Change.WEIGHT,
                        Change.CONFLICT)


@dataclass(frozen=True)
class SlotChange:
    """One slot (a census path) and what happened to it."""

    path: str
    change: Change
    detail: str = ""

    def describe(self) -> str:
        detail = f" ({self.detail})" if self.detail else ""
        return f"{self.path}: {self.change.value}{detail}"


@dataclass
class GuardReport:
    """The outcome of a snapshot (``guarded``) or of a restore (everything else too).

    ``guarded``: canonical paths of the tensors the guard keeps (weights and declared tensors
    excluded) — the list to point ``derivgraph trace`` at to draft specs. ``restored``: slots
    brought back to their startup storage. ``copied_only``: the value is in the startup storage
    but a holder still holds the engine's tensor. ``recapture``: graph recapture required.
    """

    guarded: list[str] = field(default_factory=list)
    weights: int = 0
    restored: list[SlotChange] = field(default_factory=list)
    copied_only: list[SlotChange] = field(default_factory=list)
    recapture: list[SlotChange] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        """No slot needs a recapture."""
        return not self.recapture

    def as_dict(self) -> dict[str, Any]:
        return {"guarded": len(self.guarded), "weights": self.weights,
                "restored": [c.describe() for c in self.restored],
                "copied_only": [c.describe() for c in self.copied_only],
                "recapture": [c.describe() for c in self.recapture],
                "seconds": self.seconds}

    def __str__(self) -> str:
        return (f"guard: {len(self.guarded)} guarded, {len(self.restored)} restored, "
                f"{len(self.copied_only)} copied only, {len(self.recapture)} need a recapture")
