"""What stopped vLLM's code on this machine: the exception and the vLLM frames it went through.

An executable case that cannot run reports an observed blocker, never a guess: the exception
type, its message, the first vLLM frame of the traceback (where vLLM's code was entered) and
the last one (where it raised). :func:`attempt` turns a try of vLLM's real code into that
record.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Blocker", "attempt", "blocker_of"]

_VLLM = "/vllm/"


def _frame(summary: traceback.FrameSummary) -> str:
    path = Path(summary.filename).as_posix()
    rel = "vllm/" + path.split(_VLLM, 1)[1] if _VLLM in path else Path(path).name
    return f"{rel}:{summary.lineno} in {summary.name}"


@dataclass(frozen=True)
class Blocker:
    """An exception raised by vLLM's code (or by what it calls) while a case was tried."""

    exception: str                 # type name, e.g. "AttributeError"
    message: str                   # first 240 characters, whitespace collapsed
    first_vllm_frame: str | None   # "vllm/x.py:12 in f": where vLLM's code was entered
    last_vllm_frame: str | None    # the innermost vLLM frame: where it failed

    @property
    def in_vllm(self) -> bool:
        """Raised inside vLLM's code (or what it calls), not by the try around it."""
        return self.first_vllm_frame is not None

    def __str__(self) -> str:
        where = (f" (vLLM frames: {self.first_vllm_frame} ... {self.last_vllm_frame})"
                 if self.first_vllm_frame else " (no vLLM frame)")
        return f"{self.exception}: {self.message}{where}"


def blocker_of(exc: BaseException) -> Blocker:
    """The :class:`Blocker` of ``exc`` (its traceback must still be attached)."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if _VLLM in Path(f.filename).as_posix()]
    return Blocker(type(exc).__name__, " ".join(str(exc).split())[:240],
                   _frame(frames[0]) if frames else None,
                   _frame(frames[-1]) if frames else None)


def attempt(label: str, run: Callable[[], object]) -> Callable[[], str | None]:
    """A ``not_runnable`` probe: try ``run`` (vLLM's real code for ``label``, a class) and
    return ``"label: blocker"``, or ``None`` when it ran through (the class needs a case)."""
    def reason() -> str | None:
        try:
            run()
        except Exception as exc:  # noqa: BLE001 - any failure of vLLM's code is the finding
            reason.blocker = blocker_of(exc)  # type: ignore[attr-defined]
            return f"{label}: {reason.blocker}"  # type: ignore[attr-defined]
        return None

    reason.blocker = None  # type: ignore[attr-defined]  # the last try's, read by NotRunnable
    return reason
