"""A: a refill's one-element CPU copies by aten (``_foreach_copy_``); B: by byte moves
(``ElementCopy``). A forces the fallback, so it pays B's one call more (a bias against B of well
under a microsecond)."""
from derivgraph.runtime.element_copy import ElementCopy

orig = ElementCopy.copy


def _aten(self, theirs):
    return False


def use(arm, plan, model):
    ElementCopy.copy = _aten if arm == "A" else orig
