"""A: the plugin as it is; B: the same reload with the model's guard set aside (no restore: the
guard's in-situ cost, paired per reload; nothing is rebound in this workload, so B's reloads
stay correct here)."""
from vllm_integration import session

saved = {}


def use(arm, plan, model):
    state = session.state_for(model)
    saved.setdefault("guard", state.guard)
    state.guard = saved["guard"] if arm == "A" else None
