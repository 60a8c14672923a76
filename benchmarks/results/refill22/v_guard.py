"""A: the layout check by sweeps; B: by the TensorGuards guard (refill22)."""
from derivgraph.runtime import engine as E
REAL = E._TensorGuards
saved = {}
def use(arm, plan):
    t = plan._refill_table
    if arm == "A":
        E._TensorGuards = None
        if t._guard is not None:
            saved["g"] = t._guard
        t._guard = None
    else:
        E._TensorGuards = REAL
        if t._guard is None and "g" in saved:
            t._guard = saved["g"]
