"""Guard mode: keep every graph-visible tensor at its startup storage across reloads.

See :mod:`derivgraph.guard.guard`. Typical use, after the engine's first post-load step::

    guard = Guard()
    guard.snapshot(model, declared=plan.declared_storages())
    ...                                        # reload: the engine reruns its post-load step
    report = guard.restore(model)              # strict=True raises RecaptureRequired
"""

from derivgraph.guard.guard import Guard, weight_storages
from derivgraph.guard.holders import Held, Repoint, held_tensors, repoint
from derivgraph.guard.report import Change, GuardReport, SlotChange

__all__ = ["Change", "Guard", "GuardReport", "Held", "Repoint", "SlotChange", "held_tensors",
           "repoint", "weight_storages"]
