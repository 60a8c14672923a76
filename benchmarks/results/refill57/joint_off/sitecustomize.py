"""On PYTHONPATH before this tree: every plan made with the joint address check off
(``Holders.startup`` None: the source check and ``restore_storage`` each check alone, main's
path), to tell this tree's code path from its joint check in the A/B."""

from derivgraph.runtime import plan as _plan

_init = _plan.Plan.__init__


def _without_joint(self, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
    _init(self, *args, **kwargs)
    self.holders.startup = None


_plan.Plan.__init__ = _without_joint
