"""``derivgraph trace``: draft specs from a live post-load step.

:func:`trace_model` runs a model's post-load step under a recording ``TorchDispatchMode``
(:mod:`.recorder`), diffs the object graph before and after it (:mod:`.stores`), turns the ops
from parameters and buffers to every stored tensor into formulas (:mod:`.formula`), groups
per-layer entries into specs that target a class (:mod:`.draft`), writes YAML
(:mod:`.yaml_writer`) and proves the draft with an A->B->A reload oracle (:mod:`.proof`).
Names load lazily, so ``derivgraph --help`` does not import torch.
"""

from importlib import import_module
from typing import Any

_LAZY = {
    "TraceOutcome": "api", "trace_builder": "api", "trace_model": "api",
    "Draft": "draft", "DraftEntry": "draft", "DraftSpec": "draft", "Unexpressed": "draft",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'derivgraph.trace' has no attribute {name!r}")
    return getattr(import_module(f".{module}", __name__), name)


__all__ = sorted(_LAZY)
