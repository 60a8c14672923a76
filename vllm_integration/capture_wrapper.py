"""The capture-time pointer audit around vLLM's CUDA-graph captures: in ``strict`` mode a
capture that reads a long-lived tensor no spec declares fails
(:mod:`derivgraph.audit.runtime.capture`)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from types import ModuleType
from typing import Any

from vllm_integration.config import capture_audit_enabled
from vllm_integration.hook_state import is_installed

__all__ = ["wrap_cudagraph_call"]


def _tensors_in(obj: Any, depth: int = 4, seen: set[int] | None = None) -> list[Any]:
    """Tensors held by ``obj`` through dicts, sequences and object attributes (bounded)."""
    import torch  # lazy: torch at plugin load

    seen = set() if seen is None else seen
    if id(obj) in seen or depth < 0:
        return []
    seen.add(id(obj))
    if isinstance(obj, torch.Tensor):
        return [obj]
    if isinstance(obj, dict):
        items = list(obj.values())
    elif isinstance(obj, (list, tuple)):
        items = list(obj)
    elif hasattr(obj, "__dict__") and not isinstance(obj, (type, ModuleType)):
        items = list(vars(obj).values())
    else:
        return []
    return [t for item in items for t in _tensors_in(item, depth - 1, seen)]


def _will_capture(wrapper: Any) -> bool:
    """Whether this CUDAGraphWrapper call captures (vLLM 0.33's own test, read not run)."""
    try:
        from vllm.forward_context import get_forward_context, is_forward_context_available

        if not is_forward_context_available():
            return False
        ctx = get_forward_context()
        if ctx.cudagraph_runtime_mode != wrapper.runtime_mode:
            return False
        entry = wrapper.concrete_cudagraph_entries.get(ctx.batch_descriptor)
        return entry is None or entry.cudagraph is None
    except (ImportError, AttributeError):  # another layout: audit (only captured ops count)
        return True


def _engine_pools() -> list[Any]:
    """Engine-owned tensors a capture reads: attention metadata and KV caches."""
    try:
        from vllm.forward_context import get_forward_context

        ctx = get_forward_context()
    except (ImportError, AssertionError, AttributeError):
        return []
    layers = getattr(ctx, "no_compile_layers", None) or {}
    caches = [getattr(layer, "kv_cache", None) for layer in layers.values()]
    return [*_tensors_in(getattr(ctx, "attn_metadata", None)), *_tensors_in(caches)]


def wrap_cudagraph_call(orig: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(orig)
    def __call__(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not (is_installed() and capture_audit_enabled() and _will_capture(self)):
            return orig(self, *args, **kwargs)
        from vllm_integration import session  # lazy: torch at plugin load

        models = session.planned_models()
        if not models:
            return orig(self, *args, **kwargs)
        from derivgraph.audit.runtime.capture import CaptureAudit  # lazy: torch at plugin load

        declared: dict[str, Any] = {}
        for i, model in enumerate(models):
            plan = session.plan_for(model)
            declared.update({f"model[{i}].{k}": v for k, v in plan.declared().items()})
        inputs = [*args, *kwargs.values()]
        with CaptureAudit(models, declared=declared, inputs=inputs, pools=_engine_pools(),
                          strict=True, only_while_capturing=True):
            return orig(self, *args, **kwargs)

    return __call__
