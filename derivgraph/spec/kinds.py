"""The closed kind vocabularies of the spec language, one spelling for every module.

:class:`TensorKind` is how a declared derived tensor is held (a spec's ``kind``); :class:`OpKind`
is what an op makes. Both are ``str`` enums, so YAML and JSON spell them as plain strings.
"""

from __future__ import annotations

from typing import Any

from derivgraph._enum import StrEnum

__all__ = ["HELD_KINDS", "TENSOR_KINDS", "GroupName", "OpKind", "ReduceOp", "TensorKind",
           "is_engine", "is_fold"]


class TensorKind(StrEnum):
    """How a declared derived tensor is held (the spec's ``kind``)."""

    PARAMETER = "parameter"
    BUFFER = "buffer"
    ATTRIBUTE = "attribute"
    ALIAS = "alias"    # the same object as another tensor
    VIEW = "view"      # a view of another tensor's storage
    SCALAR = "scalar"  # a Python number (a captured graph bakes it: not refillable)
    # an in-place transform of a loaded source (derivgraph.compiler.fold; not a node)
    FOLD = "fold"
    ENGINE = "engine"  # a tensor only the engine's code computes (derivgraph.compiler.engine)


def is_fold(decl: Any) -> bool:
    """True for a ``kind: fold`` declaration (bound by :mod:`derivgraph.compiler.fold`, not a
    node)."""
    return decl.kind == TensorKind.FOLD


def is_engine(decl: Any) -> bool:
    """True for a ``kind: engine`` declaration (see :mod:`derivgraph.compiler.engine`)."""
    return decl.kind == TensorKind.ENGINE


TENSOR_KINDS = frozenset({TensorKind.PARAMETER, TensorKind.BUFFER, TensorKind.ATTRIBUTE})
# derived tensors with storage of their own that the pass keeps at its startup address
HELD_KINDS = TENSOR_KINDS | {TensorKind.ENGINE}


class OpKind(StrEnum):
    """What a registered op makes: a new tensor, a view of its first argument, or a creation."""

    COMPUTE = "compute"
    VIEW = "view"
    CREATE = "create"  # from shapes and values; the compiler passes ``device=``


class GroupName(StrEnum):
    """The process groups a collective in a formula may name (``group='tp'``)."""

    TP = "tp"    # tensor parallel
    DCP = "dcp"  # decode context parallel
    EP = "ep"    # expert parallel


class ReduceOp(StrEnum):
    """The reductions ``all_reduce`` accepts."""

    SUM = "sum"
    MAX = "max"
    MIN = "min"
    PRODUCT = "product"

    def to_dist(self) -> Any:
        """The matching ``torch.distributed.ReduceOp`` (imports torch)."""
        import torch.distributed as dist

        return {
            ReduceOp.SUM: dist.ReduceOp.SUM, ReduceOp.MAX: dist.ReduceOp.MAX,
            ReduceOp.MIN: dist.ReduceOp.MIN, ReduceOp.PRODUCT: dist.ReduceOp.PRODUCT,
        }[self]
