"""A planned model's reload through the hooks runs no import: every wrapper reaches the session
module through a cached reference (a function-level ``from`` import runs the import system's
Python code on every call, cold memory right after an engine's reload)."""

from __future__ import annotations

import builtins
from typing import Any

import pytest
import torch

from derivgraph import compile_plan
from tests.toy import Toy
from vllm_integration import hook_state, reload_wrappers, session
from vllm_integration.config import MODE_ENV

pytestmark = pytest.mark.vllm


def test_a_planned_model_s_reload_through_the_hooks_imports_nothing(monkeypatch) -> None:
    model = Toy()
    model.post_load()
    session._store(model, session.ModelState(compile_plan(model, [])))
    monkeypatch.setattr(hook_state, "_installed", True)
    monkeypatch.setenv(MODE_ENV, "refill")
    initialize = reload_wrappers.wrap_initialize(lambda model: None)
    finalize = reload_wrappers.wrap_finalize(lambda model, model_config=None: None)

    def reload_weights(vllm_config: Any, model: Any, weights_iterator: Any, weights_path: Any,
                       is_checkpoint_format: bool = True) -> None:
        initialize(model)
        for _ in weights_iterator:
            pass
        finalize(model)

    wrapped = reload_wrappers.wrap_reload_weights(reload_weights)
    weights = [("weight", torch.ones(4, 3)), ("scale", torch.ones(4))]
    imports: list[str] = []
    real = builtins.__import__

    def counted(name: str, *args: Any, **kwargs: Any) -> Any:
        imports.append(name)
        return real(name, *args, **kwargs)

    try:
        wrapped(None, model, iter(weights), None, True)  # the first call may import
        builtins.__import__ = counted
        try:
            for _ in range(3):
                wrapped(None, model, iter(weights), None, True)
        finally:
            builtins.__import__ = real
        assert imports == []
        assert session.state_for(model).counters.reloads == 4
        assert session.state_for(model).counters.last["loaded_names"] == 2
    finally:
        session.detach(model)
