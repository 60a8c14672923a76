"""Wrap vLLM's load and reload functions at every name binding, without importing them.

The bindings are the rows of :data:`vllm_integration.hook_table.TABLE`: each target function is
wrapped where it is defined and re-bound in every module that imported it by name (``from x
import f`` copies the reference at import time); methods are wrapped on their class. Modules
already imported are patched by :func:`install`; the rest are patched by a post-import hook the
moment their body has run, so the plugin itself imports no vLLM module.

A wrapper is installed only over a target whose parameter names still match the row's verified
signature; otherwise the original stays in place and a warning says so (see
:mod:`vllm_integration.drift` for the startup check of the whole table).

What each wrapper reports to :mod:`vllm_integration.session`:

==================================  =============================================================
target                              derivgraph does
==================================  =============================================================
``process_weights_after_loading``   registers vLLM's tp/dcp/ep groups (idempotent), compiles the
                                    plan (first load) or refills it (a rerun); then wraps the
                                    model's ``load_weights`` (live in-place loads)
``initialize/finalize_layerwise_``  opens / closes a layerwise session: refill at the end
``reload``
``reload_weights``                  a session; kernel format: recompute what the names feed
``load_checkpoint_weight_patches``  a session: recompute what the patched names feed
``WeightTransferEngine.__init__``   wraps the engine's start / update / finish (one session)
``Worker.wake_up``                  after weights wake (level 1 or 2): recompute every plan
``model.load_weights`` (instance)   outside any session: recompute what the names feed
``CUDAGraphWrapper.__call__``       ``strict``: a capture reading an undeclared long-lived
                                    tensor fails (:mod:`derivgraph.audit.runtime.capture`)
Kimi-K3 ``pack_front``              keeps vLLM's packed MoE front (the same object) on the MoE
                                    module (:mod:`vllm_integration.kimi_k3_front`)
``build_specialized_decode``        recompiles the holding model's plan (the decode is built
                                    after the post-load step)
==================================  =============================================================
"""

from __future__ import annotations

import inspect
import logging
import sys
import threading
from collections.abc import Callable, Iterable
from types import ModuleType
from typing import Any

from vllm_integration._imports import PostImportHook
from vllm_integration.capture_wrapper import wrap_cudagraph_call
from vllm_integration.hook_state import is_installed, set_installed
from vllm_integration.hook_table import TABLE, HookKind, HookRow, definitions
from vllm_integration.kimi_k3_front import wrap_build_specialized_decode, wrap_pack_front
from vllm_integration.reload_wrappers import (
    release_models,
    wrap_engine_init,
    wrap_finalize,
    wrap_initialize,
    wrap_patches,
    wrap_post_load,
    wrap_reload_weights,
    wrap_wake_up,
)

__all__ = ["WRAPPERS", "install", "is_installed", "patched_bindings", "uninstall", "unwrapped"]

logger = logging.getLogger(__name__)

_MARK = "__derivgraph_wrapper__"


#: attribute (as in the hook table) -> the wrapper factory for that target.
WRAPPERS: dict[str, Callable[[Callable[..., Any]], Callable[..., Any]]] = {
    "process_weights_after_loading": wrap_post_load,
    "initialize_layerwise_reload": wrap_initialize,
    "finalize_layerwise_reload": wrap_finalize,
    "reload_weights": wrap_reload_weights,
    "load_checkpoint_weight_patches": wrap_patches,
    "WeightTransferEngine.__init__": wrap_engine_init,
    "Worker.wake_up": wrap_wake_up,
    "CUDAGraphWrapper.__call__": wrap_cudagraph_call,
    "pack_front": wrap_pack_front,  # Kimi-K3: keeps the packed MoE front on its module
    "KimiLinearForCausalLM.build_specialized_decode": wrap_build_specialized_decode,
}


# ---- installation ------------------------------------------------------------------------------

_lock = threading.RLock()
_hook: PostImportHook | None = None
_table: tuple[HookRow, ...] = TABLE
_disabled: frozenset[str] = frozenset()
_originals: dict[str, Callable[..., Any]] = {}
_wrappers: dict[str, Callable[..., Any]] = {}
_unwrapped: dict[str, str] = {}  # row key -> why its target was left alone
_patched: list[tuple[Any, str, Any]] = []  # (module or class, attribute, original)


def _param_names(fn: Callable[..., Any]) -> tuple[str, ...] | None:
    try:
        return tuple(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return None


def _set(owner: Any, name: str, value: Any, original: Any) -> None:
    setattr(owner, name, value)
    _patched.append((owner, name, original))


def _leave(row: HookRow, why: str) -> None:
    key = str(row) if row.kind is HookKind.BINDING else row.key
    if key not in _unwrapped:
        _unwrapped[key] = why
        logger.warning("derivgraph: %s left unwrapped (%s); reloads through it are not kept "
                       "in place", row, why)


def _make_wrapper(row: HookRow, current: Callable[..., Any]) -> bool:
    """Wrap a definition row's target; False (original kept) if its signature drifted."""
    if getattr(current, _MARK, False):  # left over from an earlier install
        current = current.__wrapped__
    found = _param_names(current)
    if found != row.signature:
        _leave(row, f"signature ({', '.join(found or ('?',))}) != verified "
                    f"({', '.join(row.signature)}); the original function is used")
        return False
    wrapper = WRAPPERS[row.attribute](current)
    setattr(wrapper, _MARK, True)
    _originals[row.key], _wrappers[row.key] = current, wrapper
    return True


def _patch_method(module: ModuleType, row: HookRow) -> None:
    cls_name, meth = row.attribute.split(".", 1)
    cls = getattr(module, cls_name, None)
    current = getattr(cls, "__dict__", {}).get(meth)
    if current is None:
        _leave(row, f"{cls_name}.{meth} not found in {row.module}")
        return
    if getattr(current, _MARK, False) and current is _wrappers.get(row.key):
        return
    if row.key not in _wrappers and not _make_wrapper(row, current):
        return
    _set(cls, meth, _wrappers[row.key], _originals[row.key])


def _patch_function(module: ModuleType, row: HookRow) -> None:
    current = getattr(module, row.attribute, None)
    if current is None:
        _leave(row, f"{row.attribute} not found in {row.module}")
        return
    if row.key not in _wrappers:
        if row.kind is not HookKind.FUNCTION or row.key in _unwrapped:
            return  # a binding before its definition was wrapped, or a drifted target
        if not _make_wrapper(row, current):
            return
    wrapper, original = _wrappers[row.key], _originals[row.key]
    if current is wrapper:  # bound by `from home import name` after we patched home
        if not any(o is module and n == row.attribute for o, n, _ in _patched):
            _patched.append((module, row.attribute, original))
    elif current is original or getattr(current, _MARK, False):
        _set(module, row.attribute, wrapper, original)
    else:
        logger.debug("derivgraph: %s is not vLLM's function; left alone", row)


def _patch_module(module: ModuleType) -> None:
    """Wrap targets defined in ``module`` and re-bind the wrappers it imported by name."""
    with _lock:
        if not is_installed():
            return
        for row in [r for r in _table if r.module == module.__name__]:
            if row.key in _disabled:
                continue
            if row.kind is HookKind.METHOD:
                _patch_method(module, row)
            else:
                _patch_function(module, row)


def _on_import(module: ModuleType) -> None:
    try:
        _patch_module(module)
    except (AttributeError, KeyError, TypeError, ValueError) as exc:  # a layout we do not know
        logger.error("derivgraph: could not hook %s (%s); reloads through it are not kept "
                     "in place", module.__name__, exc)


def install(table: tuple[HookRow, ...] = TABLE, disabled: Iterable[str] = ()) -> bool:
    """Patch every row of ``table`` now and as modules import; False if already installed.

    ``disabled``: row keys (``HookRow.key``) to leave alone, e.g. targets the startup drift
    check found changed.
    """
    global _hook, _table, _disabled
    with _lock:
        if is_installed():
            return False
        set_installed(True)
        _table, _disabled = tuple(table), frozenset(disabled)
        for key in _disabled:
            _unwrapped.setdefault(key, "disabled by the startup drift check")
        watched = list(dict.fromkeys(r.module for r in _table))
        _hook = PostImportHook(watched, _on_import)
        _hook.install()
        homes = [r.module for r in definitions(_table)]
        for name in dict.fromkeys([*homes, *watched]):  # definitions before their importers
            module = sys.modules.get(name)
            if module is not None:
                _on_import(module)
    logger.debug("derivgraph: vLLM hooks installed")
    return True


def uninstall() -> None:
    """Restore every original binding and stop watching imports (for tests and ``off``)."""
    global _hook, _table, _disabled
    with _lock:
        if _hook is not None:
            _hook.remove()
            _hook = None
        for owner, name, original in reversed(_patched):
            if getattr(getattr(owner, name, None), _MARK, False):
                setattr(owner, name, original)
        release_models()
        _patched.clear()
        _originals.clear()
        _wrappers.clear()
        _unwrapped.clear()
        set_installed(False)
        _table, _disabled = TABLE, frozenset()


def unwrapped() -> dict[str, str]:
    """Row key -> why that target was left unwrapped (drifted, missing or disabled)."""
    with _lock:
        return dict(_unwrapped)


def patched_bindings() -> list[str]:
    """``module.attribute`` of every binding currently patched (for diagnostics)."""
    with _lock:
        return [f"{getattr(o, '__module__', '') + '.' if isinstance(o, type) else ''}"
                f"{getattr(o, '__name__', o)}.{n}" for o, n, _ in _patched]
