"""derivgraph: declare weight-derived tensors once; refill them in place on every reload.

Typical use::

    import derivgraph

    plan = derivgraph.compile_plan(model)      # after the engine's first post-load step
    ...                                        # reload weights
    report = plan.run(verify=True)             # recompute into the startup storage
    assert report.moved == []
"""

from .errors import (
    AdoptionError,
    DerivgraphError,
    Rule,
    SourceLocation,
    SpecIssue,
    SpecValidationError,
    StrictReloadError,
)
from .loader import builtin_specs, default_specs, load_spec_file, load_spec_text, load_specs
from .ops import register_op, unregister_op
from .plan import Plan, compile_plan
from .report import RunReport
from .spec import DerivedTensor, Spec, SpecFile, Target

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
