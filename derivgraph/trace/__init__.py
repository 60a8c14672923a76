"""``derivgraph trace``: draft specs from a live post-load step.

:func:`trace_model` runs a model's post-load step under a recording ``TorchDispatchMode``
(:mod:`.recorder`), diffs the object graph before and after it (:mod:`.stores`), turns the ops
from parameters and buffers to every stored tensor into formulas (:mod:`.formula`), groups
per-layer entries into specs that target a class (:mod:`.draft`), writes YAML
(:mod:`.yaml_writer`) and proves the draft with an A->B->A reload oracle (:mod:`.proof`).
"""

from __future__ import annotations

from .api import TraceOutcome, trace_builder, trace_model
from .draft import Draft, DraftEntry, DraftSpec, Unexpressed

__all__ = ["Draft", "DraftEntry", "DraftSpec", "TraceOutcome", "Unexpressed", "trace_builder",
           "trace_model"]
