"""derivgraph: declare weight-derived tensors once; refill them in place on every reload.

Typical use::

    import derivgraph

    plan = derivgraph.compile_plan(model)      # after the engine's first post-load step
    ...                                        # reload weights
    report = plan.run(verify=True)             # recompute into the startup storage
    assert report.moved == []
"""

from importlib import import_module
from typing import Any

from derivgraph.errors import (
    AdoptionError,
    DerivgraphError,
    Rule,
    SourceLocation,
    SpecIssue,
    SpecValidationError,
    StrictReloadError,
)

# Names load on first use: the spec models need pydantic, the plan needs torch, and the command
# line (``derivgraph --help``) and the static audit should pay for neither.
_LAZY = {
    "builtin_specs": "spec.load",
    "default_specs": "spec.load",
    "load_spec_file": "spec.load",
    "load_spec_text": "spec.load",
    "load_specs": "spec.load",
    "DerivedTensor": "spec.model",
    "Spec": "spec.model",
    "SpecFile": "spec.model",
    "Target": "spec.model",
    "Plan": "runtime.plan",
    "compile_plan": "planner",
    "RunReport": "runtime.report",
    "register_op": "ops",
    "unregister_op": "ops",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'derivgraph' has no attribute {name!r}")
    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


__all__ = [
    "AdoptionError",
    "DerivedTensor",
    "DerivgraphError",
    "Plan",
    "Rule",
    "RunReport",
    "SourceLocation",
    "Spec",
    "SpecFile",
    "SpecIssue",
    "SpecValidationError",
    "StrictReloadError",
    "Target",
    "builtin_specs",
    "compile_plan",
    "default_specs",
    "load_spec_file",
    "load_spec_text",
    "load_specs",
    "register_op",
    "unregister_op",
]

__version__ = "0.1.0"
