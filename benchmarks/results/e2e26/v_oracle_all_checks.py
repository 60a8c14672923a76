"""A: the plugin as it is; B: an UNSAFE oracle with every check free: the guard set aside and the
plan's source check, startup-storage check and verify's moved() answered "intact" without
reading (v_oracle_plan_checks.py + v_oracle_guard.py): what is left is the refill's own work
(the pass, the engine's fresh values copied in, the scalars, the rebind) and the bookkeeping."""
import importlib.util
from pathlib import Path


def _load(name):
    spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name(name + ".py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


plan_checks, guard = _load("v_oracle_plan_checks"), _load("v_oracle_guard")


def use(arm, plan, model):
    plan_checks.use(arm, plan, model)
    guard.use(arm, plan, model)
