"""The cyclic garbage collector around work that makes many long-lived objects at once.

:func:`promote_survivors` is the one rule the compile (``planner.compile_plan``) and the
static audit's scan (``audit.static.scan.young_collections_only``) follow after pausing the
collector: the objects their work left in the young generations are moved to the oldest one
without a walk.
"""

from __future__ import annotations

import gc

__all__ = ["promote_survivors"]


def promote_survivors() -> None:
    """Move every object of the young generations to the oldest one, without walking them.

    Work that pauses the collector and keeps what it builds (a compile's plan: about a million
    tracked objects at 100k derived tensors; the scan's tree index, texts and tables) leaves
    all of it in the young generations: the next automatic collections walk every one (about
    0.2 s each at that size) only to move it to the middle generation, then to the oldest.
    The oldest generation is walked only when it has grown by a quarter, so they wait there;
    garbage among them is freed by refcounting or by that full collection. Done with
    ``gc.freeze()``/``gc.unfreeze()`` (two list splices), and only where nothing else is
    frozen: unfreezing would otherwise thaw a caller's frozen objects too."""
    if gc.get_freeze_count() == 0:
        gc.freeze()
        gc.unfreeze()
