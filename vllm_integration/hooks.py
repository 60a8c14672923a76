"""Wrap vLLM 0.33's load and reload functions at every name binding, without importing them.

Each target function is wrapped where it is defined and re-bound in every module that imported
it by name (``from x import f`` copies the reference at import time). Modules already imported
are patched by :func:`install`; the rest are patched by a post-import hook the moment their body
has run, so the plugin itself imports no vLLM module.

========================================  =========================================================
function (defined in)                     also bound in
========================================  =========================================================
``process_weights_after_loading``         ``model_loader.base_loader``,
(``model_loader.utils``)                  ``model_loader.weight_cache.{daemon,ipc_loader}``
``initialize_layerwise_reload``           ``model_loader.reload`` (package), ``reload.inplace``,
(``model_loader.reload.layerwise``)       ``reload.torchao_decorator``
``finalize_layerwise_reload``             the same, and ``models.expert_substitution``
(``model_loader.reload.layerwise``)
``reload_weights``                        ``v1.worker.gpu_model_runner``,
(``model_loader.reload.inplace``)         ``v1.worker.gpu.model_runner``
``load_checkpoint_weight_patches``        ``distributed.weight_transfer.sparse_nccl_engine``
(``model_loader.checkpoint_weight_patch``)
``WeightTransferEngine.__init__``         every engine instance gets its start / update / finish
(``distributed.weight_transfer.base``)    methods wrapped
========================================  =========================================================
"""

from __future__ import annotations

import functools
import inspect
import logging
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from ._imports import PostImportHook

__all__ = ["TARGETS", "install", "is_installed", "patched_bindings", "uninstall"]

logger = logging.getLogger(__name__)

_ML = "vllm.model_executor.model_loader"
_RELOAD = f"{_ML}.reload"
_WT = "vllm.distributed.weight_transfer"
_ENGINE_BASE = f"{_WT}.base"
_MARK = "__derivgraph_wrapper__"


@dataclass(frozen=True)
class Target:
    """A function to wrap: its name, its defining module, and modules that bind it by name."""

    name: str
    home: str
    bindings: tuple[str, ...]
    wrap: Callable[[Callable[..., Any]], Callable[..., Any]]


def _oracle():
    from . import oracle

    return oracle


def _active() -> bool:
    from .config import current_mode

    return _installed and current_mode() != "off"


def _arg(args: tuple[Any, ...], kwargs: dict[str, Any], index: int, name: str) -> Any:
    return args[index] if len(args) > index else kwargs.get(name)


def _aborting_on_error(model: Any, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call ``fn``; if it raises, abort the model's reload session and re-raise."""
    try:
        return fn(*args, **kwargs)
    except BaseException:
        _oracle().abort(model)
        raise


# ---- wrappers ---------------------------------------------------------------------------------

def _wrap_post_load(orig: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(orig)
    def process_weights_after_loading(*args: Any, **kwargs: Any) -> Any:
        result = orig(*args, **kwargs)
        if _active():
            _oracle().on_post_load(_arg(args, kwargs, 0, "model"))
        return result

    return process_weights_after_loading


def _wrap_initialize(orig: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(orig)
    def initialize_layerwise_reload(*args: Any, **kwargs: Any) -> Any:
        model = _arg(args, kwargs, 0, "model")
        if _active():
            _oracle().begin(model, "layerwise", layerwise=True)
        return _aborting_on_error(model, orig, *args, **kwargs)

    return initialize_layerwise_reload


def _wrap_finalize(orig: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(orig)
    def finalize_layerwise_reload(*args: Any, **kwargs: Any) -> Any:
        model = _arg(args, kwargs, 0, "model")
        result = _aborting_on_error(model, orig, *args, **kwargs)
        if _active():  # every layer is placed back: refill the startup storage
            _oracle().end(model, layerwise=True)
        return result

    return finalize_layerwise_reload


def _recording(weights: Iterable[tuple[str, Any]], sink: list[str]) -> Iterator[tuple[str, Any]]:
    for name, tensor in weights:
        sink.append(name)
        yield name, tensor


def _wrap_reload_weights(orig: Callable[..., Any]) -> Callable[..., Any]:
    signature = inspect.signature(orig)

    @functools.wraps(orig)
    def reload_weights(*args: Any, **kwargs: Any) -> Any:
        if not _active():
            return orig(*args, **kwargs)
        bound = signature.bind(*args, **kwargs)
        model = bound.arguments["model"]
        kernel_format = not bound.arguments.get("is_checkpoint_format", True)
        names: list[str] = []
        if bound.arguments.get("weights_iterator") is not None:
            bound.arguments["weights_iterator"] = _recording(bound.arguments["weights_iterator"],
                                                             names)
        oracle = _oracle()
        oracle.begin(model, "kernel-format" if kernel_format else "checkpoint-format")
        result = _aborting_on_error(model, orig, *bound.args, **bound.kwargs)
        # kernel format: the names are runtime names (vLLM copies into get_parameter(name))
        oracle.note_names(model, names, runtime=kernel_format)
        oracle.end(model)
        return result

    return reload_weights


def _wrap_patches(orig: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(orig)
    def load_checkpoint_weight_patches(*args: Any, **kwargs: Any) -> Any:
        if not _active():
            return orig(*args, **kwargs)
        model = _arg(args, kwargs, 0, "model")
        oracle = _oracle()
        oracle.begin(model, "patch")
        loaded = _aborting_on_error(model, orig, *args, **kwargs)
        oracle.note_names(model, loaded or (), runtime=True)  # what model.load_weights reported
        oracle.end(model)
        return loaded

    return load_checkpoint_weight_patches


def _instrument_engine(engine: Any) -> None:
    """Wrap one weight-transfer engine's start / update / finish as instance attributes."""
    if engine.__dict__.get("_derivgraph_instrumented"):
        return
    start, update, finish = (engine.start_weight_update, engine.update_weights,
                             engine.finish_weight_update)

    @functools.wraps(start)
    def start_weight_update(*args: Any, **kwargs: Any) -> Any:
        model = engine.model
        if _active():
            _oracle().begin(model, "weight-transfer", restart=True)
        return _aborting_on_error(model, start, *args, **kwargs)

    @functools.wraps(update)
    def update_weights(update_info: Any, *args: Any, **kwargs: Any) -> Any:
        model = engine.model
        result = _aborting_on_error(model, update, update_info, *args, **kwargs)
        names = update_info.get("names") if isinstance(update_info, dict) else None
        if _active() and names:
            _oracle().note_names(model, [str(n) for n in names], runtime=False)
        return result

    @functools.wraps(finish)
    def finish_weight_update(*args: Any, **kwargs: Any) -> Any:
        model = engine.model  # read before: the worker re-targets the engine afterwards
        result = _aborting_on_error(model, finish, *args, **kwargs)
        if _active():
            _oracle().end(model)
        return result

    engine.start_weight_update = start_weight_update
    engine.update_weights = update_weights
    engine.finish_weight_update = finish_weight_update
    engine._derivgraph_instrumented = True


def _wrap_engine_init(orig: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(orig)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        orig(self, *args, **kwargs)
        _instrument_engine(self)

    return __init__


TARGETS: tuple[Target, ...] = (
    Target("process_weights_after_loading", f"{_ML}.utils",
           (f"{_ML}.base_loader", f"{_ML}.weight_cache.daemon", f"{_ML}.weight_cache.ipc_loader"),
           _wrap_post_load),
    Target("initialize_layerwise_reload", f"{_RELOAD}.layerwise",
           (_RELOAD, f"{_RELOAD}.inplace", f"{_RELOAD}.torchao_decorator"), _wrap_initialize),
    Target("finalize_layerwise_reload", f"{_RELOAD}.layerwise",
           (_RELOAD, f"{_RELOAD}.inplace", f"{_RELOAD}.torchao_decorator",
            "vllm.model_executor.models.expert_substitution"), _wrap_finalize),
    Target("reload_weights", f"{_RELOAD}.inplace",
           ("vllm.v1.worker.gpu_model_runner", "vllm.v1.worker.gpu.model_runner"),
           _wrap_reload_weights),
    Target("load_checkpoint_weight_patches", f"{_ML}.checkpoint_weight_patch",
           (f"{_WT}.sparse_nccl_engine",), _wrap_patches),
)

# ---- installation -----------------------------------------------------------------------------

_lock = threading.RLock()
_installed = False
_hook: PostImportHook | None = None
_originals: dict[str, Callable[..., Any]] = {}
_wrappers: dict[str, Callable[..., Any]] = {}
_patched: list[tuple[Any, str, Any]] = []  # (module or class, attribute, original)


def _watched() -> list[str]:
    names = [_ENGINE_BASE]
    for t in TARGETS:
        names += [t.home, *t.bindings]
    return list(dict.fromkeys(names))


def _set(owner: Any, name: str, value: Any, original: Any) -> None:
    setattr(owner, name, value)
    _patched.append((owner, name, original))


def _patch_module(module: ModuleType) -> None:
    """Wrap targets defined in ``module`` and re-bind the wrappers it imported by name."""
    with _lock:
        if not _installed:
            return
        modname = module.__name__
        for t in TARGETS:
            if modname not in (t.home, *t.bindings):
                continue
            current = getattr(module, t.name, None)
            if current is None:
                continue
            if t.name not in _wrappers:
                if modname != t.home:
                    continue
                if getattr(current, _MARK, False):  # left over from an earlier install
                    current = current.__wrapped__
                wrapper = t.wrap(current)
                setattr(wrapper, _MARK, True)
                _originals[t.name], _wrappers[t.name] = current, wrapper
            wrapper, original = _wrappers[t.name], _originals[t.name]
            if current is wrapper:  # bound by `from home import name` after we patched home
                if not any(o is module and n == t.name for o, n, _ in _patched):
                    _patched.append((module, t.name, original))
            elif current is original or getattr(current, _MARK, False):
                _set(module, t.name, wrapper, original)
            else:
                logger.debug("derivgraph: %s.%s is not vLLM's function; left alone",
                             modname, t.name)
        if modname == _ENGINE_BASE:
            cls = module.WeightTransferEngine
            init = cls.__dict__["__init__"]
            if not getattr(init, _MARK, False):
                wrapper = _wrap_engine_init(init)
                setattr(wrapper, _MARK, True)
                _set(cls, "__init__", wrapper, init)


def _on_import(module: ModuleType) -> None:
    try:
        _patch_module(module)
    except (AttributeError, KeyError, TypeError) as exc:  # a vLLM layout we do not know
        logger.error("derivgraph: could not hook %s (%s); reloads through it are not kept "
                     "in place", module.__name__, exc)


def install() -> bool:
    """Patch every binding now and as modules import; False if already installed."""
    global _installed, _hook
    with _lock:
        if _installed:
            return False
        _installed = True
        _hook = PostImportHook(_watched(), _on_import)
        _hook.install()
        homes = [t.home for t in TARGETS]
        for name in [*homes, *_watched()]:  # definitions before the modules that import them
            module = sys.modules.get(name)
            if module is not None:
                _on_import(module)
    logger.debug("derivgraph: vLLM hooks installed")
    return True


def uninstall() -> None:
    """Restore every original binding and stop watching imports (for tests and ``off``)."""
    global _installed, _hook
    with _lock:
        if _hook is not None:
            _hook.remove()
            _hook = None
        for owner, name, original in reversed(_patched):
            if getattr(getattr(owner, name, None), _MARK, False):
                setattr(owner, name, original)
        _patched.clear()
        _originals.clear()
        _wrappers.clear()
        _installed = False


def is_installed() -> bool:
    """True while the hooks are installed."""
    return _installed


def patched_bindings() -> list[str]:
    """``module.attribute`` of every binding currently patched (for diagnostics)."""
    with _lock:
        return [f"{getattr(o, '__module__', '') + '.' if isinstance(o, type) else ''}"
                f"{getattr(o, '__name__', o)}.{n}" for o, n, _ in _patched]
