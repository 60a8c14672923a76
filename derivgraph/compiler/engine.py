"""Engine-computed tensors: derived tensors whose value only the engine's own code produces.

Some derived tensors come out of an opaque engine op, e.g. CUTLASS W4A8's ``b_strides1/2``
from ``ops.cutlass_encode_and_reorder_int4b_grouped`` (a CUDA op). A spec declares them as
``kind: engine``::

    - {name: b_strides1, owner: quant_method, kind: engine}

* Compile (after the engine's first post-load step) adopts the tensor the engine holds: it
  must exist; a declared ``dtype``/``shape`` must match it.
* ``plan.refill()`` (the engine reran its post-load step) copies the engine's fresh value into
  the startup storage and re-binds every holder, like any derived tensor.
* ``plan.run()`` (the kernel-format / recompute path: no post-load step ran) cannot compute
  it and refuses with :class:`EngineComputedError` (DG082) before touching anything, when the
  reload touched the tensor's module (``updated`` names a path under it, or ``updated=None``);
  the run-time half is :mod:`derivgraph.runtime.engine`.
* With a ``formula`` whose ops are all registered when the plan is compiled (e.g. the engine
  integration registers the CUDA op with :func:`derivgraph.register_op`), the entry is an
  ordinary formula-backed tensor that ``run()`` recomputes; otherwise the formula is ignored
  (validation does not report its unknown ops).
"""

from __future__ import annotations

from typing import Any

import torch

from derivgraph.compare import max_difference
from derivgraph.compiler.graph import DerivedNode
from derivgraph.errors import FormulaError, Rule
from derivgraph.ops import DTYPES
from derivgraph.paths import MISSING, get_path
from derivgraph.spec.expr import parse_formula
from derivgraph.spec.kinds import is_engine
from derivgraph.spec.model import DerivedTensor

__all__ = ["adoption_problem", "engine_meta", "is_engine", "is_opaque"]


def is_opaque(decl: DerivedTensor) -> bool:
    """An engine tensor without a usable formula (none given, or an op not registered)."""
    if not is_engine(decl):
        return False
    if not decl.formula:
        return True
    try:
        parse_formula(decl.formula)
    except FormulaError as exc:
        return exc.rule == Rule.UNKNOWN_OP
    return False


def adoption_problem(node: DerivedNode, current: Any, value: Any) -> tuple[str, str, str] | None:
    """(rule, message, fix) if the engine's tensor at ``node`` cannot be adopted, else None.

    ``value`` is the formula's value for a formula-backed entry (compared within
    ``tolerance``), or the engine's own tensor for an opaque one.
    """
    decl = node.decl
    if not isinstance(current, torch.Tensor):
        return (Rule.ENGINE_VALUE, f"{node.id} is engine-computed, but the engine holds "
                f"{type(current).__name__ if current is not MISSING else 'nothing'} there",
                "compile the plan after the engine's post-load step, which makes the tensor")
    wrong = []
    if decl.dtype is not None and DTYPES.get(decl.dtype) != current.dtype:
        wrong.append(f"dtype {current.dtype} (declared {decl.dtype})")
    if decl.shape is not None and [s for s in decl.shape if isinstance(s, str)]:
        shape = [node.params.get(s, s) if isinstance(s, str) else s for s in decl.shape]
    else:
        shape = decl.shape
    if shape is not None and list(current.shape) != list(shape):
        wrong.append(f"shape {list(current.shape)} (declared {shape})")
    if wrong:
        return (Rule.ENGINE_VALUE, f"the engine's {node.id} has " + "; ".join(wrong),
                "fix the declared dtype/shape to what the engine's op makes, or drop them")
    if isinstance(value, torch.Tensor) and value is not current:
        # equal infinities and NaN pairs agree (compare.max_difference)
        same = value.shape == current.shape and value.dtype == current.dtype and \
            max_difference(value, current.to(value.device)) <= decl.tolerance
        if not same:
            return (Rule.ADOPTION, f"the engine's {node.id} differs from the registered op's "
                    f"value {decl.formula!r}", "fix the op or the formula to match the engine")
    return None


def engine_meta(model: Any, node_id: str) -> torch.Tensor:
    """The engine's tensor at ``node_id`` on the meta device (for shape inference)."""
    current = get_path(model, node_id)
    if not isinstance(current, torch.Tensor):
        raise ValueError(f"{node_id} is engine-computed, but the engine holds no tensor there; "
                         "compile after the engine's post-load step")
    return torch.empty_strided(current.shape, current.stride(), dtype=current.dtype,
                               device="meta")
