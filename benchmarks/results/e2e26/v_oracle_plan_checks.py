"""A: the plan's refill as it is; B: an UNSAFE oracle, the upper bound of what any sharing of the
plan's checks with the guard could save: the plan's source check (owners, holders, storage
words), its startup-storage check and verify's moved() answered "intact" without reading
anything (nothing moves in this workload, so B's reloads stay correct here)."""
from derivgraph.runtime.holders import Holders
from derivgraph.runtime.storage import BoundTensors

orig_intact, orig_moved, orig_restore = Holders.sources_intact, Holders.moved, BoundTensors.restore_storage


def oracle_intact(self, report=None):
    self._owners_checked = (report, self.hops) if report is not None else None
    self._sources_checked = report
    return True


def use(arm, plan, model):
    b = arm == "B"
    Holders.sources_intact = oracle_intact if b else orig_intact
    Holders.moved = (lambda self, source_ptrs, report=None: []) if b else orig_moved
    BoundTensors.restore_storage = (lambda self: []) if b else orig_restore
