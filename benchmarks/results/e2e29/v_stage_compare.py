"""e2e29's first library change (``BoundTensors.staged_if_changed``): A: the refill's derived
scalars as before it (``staged`` read into a dict, then the per-target compare); B: the branch's
(one list compare per staging buffer, the per-target compare only on a difference). Both are
the plan's ``set_scalars`` helper, swapped in the generated entry's globals."""
from derivgraph.runtime.plan import Plan

saved = {}


def _old(plan):
    def set_scalars(targets, report):
        staged = plan.tensors.staged(targets)  # one host transfer per staging buffer
        for target in targets:
            entry = plan.entries[target]
            new = float(staged[target]) if entry.storage.__class__ is float else staged[target]
            if new != entry.storage and not (new != new and entry.storage != entry.storage):
                report.recapture_required.append(target)
                entry.storage = new
                plan.holders.rebind_entries([entry], report)
    return set_scalars


def use(arm, plan, model):
    if not saved:
        saved.update(A=_old(plan), B=plan._set_scalars)
        assert Plan._set_scalars.__code__.co_names.count("staged_if_changed") == 1
    for prog in list(plan.programs._by_name.values()):
        if prog.fn.__globals__.get("set_scalars") is not None:
            prog.fn.__globals__["set_scalars"] = saved[arm]
    plan.bindings["set_scalars"] = saved[arm]
