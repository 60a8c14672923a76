"""What a plan reports: one run of the reload pass (:class:`RunReport`), and its tensors
(:func:`rows`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import torch

from derivgraph.compiler.graph import DerivedGraph
from derivgraph.compiler.ir import NodeKind
from derivgraph.runtime.entry import Entry
from derivgraph.spec.kinds import HELD_KINDS, TensorKind, is_engine

__all__ = ["RunReport", "rows"]


@dataclass
class RunReport:
    """Steps run, tensors and bytes written, holders re-bound, time, and what needs attention.

    ``recapture_required`` lists derived Python scalars whose value changed: a captured graph
    baked the old number, so only a recapture makes it current. ``restored`` lists tensors the
    engine had re-pointed at new storage (``t.data = new``) that were put back. ``moved`` is
    filled when the run was asked to verify: bound tensors or sources whose object or address
    changed. ``replayed`` says the run replayed the captured pass. ``reallocated`` lists derived
    tensors re-allocated because a source changed shape or dtype (permissive mode); they, and
    sources that moved, are also in ``recapture_required`` ("moved: graph recapture required").
    """

    mode: str = "recompute"
    steps: int = 0
    written: int = 0
    bytes: int = 0
    rebinds: int = 0
    taken_from_engine: int = 0
    seconds: float = 0.0
    recapture_required: list[str] = field(default_factory=list)
    missing_owners: list[str] = field(default_factory=list)
    restored: list[str] = field(default_factory=list)
    moved: list[str] | None = None
    replayed: bool = False
    reallocated: list[str] = field(default_factory=list)
    folded: list[str] = field(default_factory=list)  # sources folded by this pass
    folds_skipped: list[str] = field(default_factory=list)  # not loaded since

    def as_dict(self) -> dict[str, Any]:
        """The fields as plain data (lists copied): ``dataclasses.asdict`` without its deep
        copy, which a reload pays every time."""
        return {k: list(v) if isinstance(v, list) else v for k, v in vars(self).items()}

    def __str__(self) -> str:
        text = (f"{self.mode}: {self.steps} steps, {self.written} tensors / {self.bytes} bytes "
                f"written, {self.rebinds} holders re-bound, {self.seconds * 1e3:.2f} ms")
        if self.moved is not None:
            text += f", moved {len(self.moved)}"
        if self.replayed:
            text += ", replayed the captured pass"
        if self.reallocated:
            text += f", {len(self.reallocated)} re-allocated (moved: graph recapture required)"
        if self.folded:
            text += f", {len(self.folded)} source(s) folded"
        if self.recapture_required:
            text += f", recapture required for {len(self.recapture_required)}"
        return text


def rows(entries: Mapping[str, Entry], graph: DerivedGraph) -> list[dict[str, Any]]:
    """One row per derived tensor: node, owner, kind, shape, dtype, bytes, op, spec."""
    out = []
    for key, e in entries.items():
        node = e.node
        s = e.storage
        producer = "-"
        if node.kind is TensorKind.ALIAS:
            producer = f"alias of {node.input}"
        elif node.kind is TensorKind.VIEW:
            producer = f"view of {node.input}"
        elif node.input is None and is_engine(node.decl):
            producer = "engine-computed"
        elif node.input is not None:
            data = graph.nodes[node.input]
            producer = data.op if data.kind is NodeKind.OP else f"copy {node.input}"
        out.append({
            "node": key,
            "owner": node.owner_path or "<model>",
            "kind": node.kind.value,
            "shape": list(s.shape) if isinstance(s, torch.Tensor) else [],
            "dtype": str(s.dtype).removeprefix("torch.") if isinstance(s, torch.Tensor)
            else type(s).__name__,
            "bytes": e.nbytes() if node.kind in HELD_KINDS else 0,
            "op": producer,
            "adopted": e.adopted,
            "spec": node.bound.spec.name,
            "location": str(node.decl.location),
        })
    return out
