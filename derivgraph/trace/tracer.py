"""Run a post-load step (or a whole build) under the recorder and draft specs from it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from torch import nn

from derivgraph.trace.draft import Draft, build_draft
from derivgraph.trace.recorder import Recorder
from derivgraph.trace.stores import snapshot

__all__ = ["trace_build", "trace_step"]


def trace_step(model: nn.Module, step: Callable[[nn.Module], Any]) -> Draft:
    """Record ``step(model)`` (the post-load step of a loaded model) and draft its specs."""
    before = snapshot(model)
    recorder = Recorder()
    with recorder:
        step(model)
    return build_draft(model, recorder, before, snapshot(model))


def trace_build(build: Callable[[], nn.Module]) -> tuple[nn.Module, Draft]:
    """Record a whole ``build()`` (create, load, post-load): every registered tensor loaded in
    place or not derivable is a source; everything else it stored is drafted."""
    recorder = Recorder()
    with recorder:
        model = build()
    return model, build_draft(model, recorder, None, snapshot(model))
