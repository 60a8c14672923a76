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

import functools
import inspect
import logging
import sys
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator
from types import ModuleType
from typing import Any

from vllm_integration._imports import PostImportHook
from vllm_integration.hook_table import TABLE, HookKind, HookRow, definitions
from vllm_integration.kimi_k3_front import wrap_build_specialized_decode, wrap_pack_front

__all__ = ["install", "is_installed", "patched_bindings", "uninstall", "unwrapped"]

logger = logging.getLogger(__name__)

_MARK = "__derivgraph_wrapper__"


def _session():
    from vllm_integration import session

    return session


def _active() -> bool:
    from vllm_integration.config import current_mode

    return _installed and current_mode() != "off"


def _arg(args: tuple[Any, ...], kwargs: dict[str, Any], index: int, name: str) -> Any:
    return args[index] if len(args) > index else kwargs.get(name)


def _aborting_on_error(model: Any, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call ``fn``; if it raises, abort the model's reload session and re-raise."""
    try:
        return fn(*args, **kwargs)
    except BaseException:
        _session().abort(model)
        raise


# ---- wrappers ---------------------------------------------------------------------------------

def _wrap_post_load(orig: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(orig)
    def process_weights_after_loading(*args: Any, **kwargs: Any) -> Any:
        result = orig(*args, **kwargs)
        if _active():
            model = _arg(args, kwargs, 0, "model")
            from vllm_integration import (
                groups,  # vLLM's tp/dcp/ep groups for collectives, before a compile
            )

            groups.register_vllm_groups()
            _session().on_post_load(model)
            _instrument_model(model)
        return result

    return process_weights_after_loading


def _wrap_initialize(orig: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(orig)
    def initialize_layerwise_reload(*args: Any, **kwargs: Any) -> Any:
        model = _arg(args, kwargs, 0, "model")
        if _active():
            _session().begin(model, "layerwise", layerwise=True)
        return _aborting_on_error(model, orig, *args, **kwargs)

    return initialize_layerwise_reload


def _wrap_finalize(orig: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(orig)
    def finalize_layerwise_reload(*args: Any, **kwargs: Any) -> Any:
        model = _arg(args, kwargs, 0, "model")
        result = _aborting_on_error(model, orig, *args, **kwargs)
        if _active():  # every layer is placed back: refill the startup storage
            _session().end(model, layerwise=True)
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
        session = _session()
        session.begin(model, "kernel-format" if kernel_format else "checkpoint-format")
        result = _aborting_on_error(model, orig, *bound.args, **bound.kwargs)
        # kernel format: the names are runtime names (vLLM copies into get_parameter(name))
        session.note_names(model, names, runtime=kernel_format)
        session.end(model)
        return result

    return reload_weights


def _wrap_patches(orig: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(orig)
    def load_checkpoint_weight_patches(*args: Any, **kwargs: Any) -> Any:
        if not _active():
            return orig(*args, **kwargs)
        model = _arg(args, kwargs, 0, "model")
        session = _session()
        session.begin(model, "patch")
        loaded = _aborting_on_error(model, orig, *args, **kwargs)
        session.note_names(model, loaded or (), runtime=True)  # what model.load_weights reported
        session.end(model)
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
            _session().begin(model, "weight-transfer", restart=True)
        return _aborting_on_error(model, start, *args, **kwargs)

    @functools.wraps(update)
    def update_weights(update_info: Any, *args: Any, **kwargs: Any) -> Any:
        model = engine.model
        result = _aborting_on_error(model, update, update_info, *args, **kwargs)
        names = update_info.get("names") if isinstance(update_info, dict) else None
        if _active() and names:
            _session().note_names(model, [str(n) for n in names], runtime=False)
        return result

    @functools.wraps(finish)
    def finish_weight_update(*args: Any, **kwargs: Any) -> Any:
        model = engine.model  # read before: the worker re-targets the engine afterwards
        result = _aborting_on_error(model, finish, *args, **kwargs)
        if _active():
            _session().end(model)
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


# ---- live load_weights and sleep / wake --------------------------------------------------------

class _LiveLoadWeights:
    """A planned model's ``load_weights``: outside a reload session it is an in-place update.

    It holds the model weakly and the class's function, so a census of the model finds no new
    tensor paths through it. Inside a session (layerwise reload, weight transfer) it only
    records names; a call on a live model opens its own session, and closing it recomputes the
    derived tensors that the loaded names feed (vLLM reruns no post-load step there).
    """

    __slots__ = ("_load", "_model")

    def __init__(self, model: Any, load: Callable[..., Any]):
        self._model = weakref.ref(model)
        self._load = load

    def __call__(self, weights: Iterable[tuple[str, Any]], *args: Any, **kwargs: Any) -> Any:
        model = self._model()
        if model is None or not _active():
            return self._load(model, weights, *args, **kwargs)
        names: list[str] = []
        session = _session()
        session.begin(model, "load-weights")
        result = _aborting_on_error(model, self._load, model, _recording(weights, names),
                                    *args, **kwargs)
        session.note_names(model, names, runtime=False)
        session.end(model)
        return result


_instrumented: weakref.WeakSet[Any] = weakref.WeakSet()


def _instrument_model(model: Any) -> None:
    """Wrap a planned model's ``load_weights`` as an instance attribute (once)."""
    if _session().state_for(model) is None or model in _instrumented:
        return
    load = getattr(type(model), "load_weights", None)
    if not callable(load) or "load_weights" in getattr(model, "__dict__", {}):
        return  # no loader, or the instance already overrides it: left alone
    model.__dict__["load_weights"] = _LiveLoadWeights(model, load)
    _instrumented.add(model)


def _worker_models(worker: Any) -> list[Any]:
    runner = getattr(worker, "model_runner", None)
    models = [getattr(runner, "model", None)]
    get_draft = getattr(worker, "get_draft_model", None)
    if callable(get_draft):
        try:
            models.append(get_draft())
        except (AttributeError, ValueError):  # no drafter
            logger.debug("derivgraph: the worker has no draft model")
    return [m for m in models if m is not None and _session().state_for(m) is not None]


def _wrap_wake_up(orig: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(orig)
    def wake_up(self: Any, tags: list[str] | None = None, *args: Any, **kwargs: Any) -> Any:
        result = orig(self, tags, *args, **kwargs)
        if _active() and (tags is None or "weights" in tags):
            # level 2 discarded the weights pool; vLLM restores buffers (and the parameters
            # named in sleep_preserve_parameter_names), never plain derived attributes
            session = _session()
            for model in _worker_models(self):
                state = session.state_for(model)
                if state is not None:  # constants are not in the pass: level 2 wiped them
                    state.plan.rewrite_constants()
                session.begin(model, "wake-up")
                session.end(model)
        return result

    return wake_up


# ---- capture-time pointer audit around vLLM's CUDA-graph captures -------------------------------

def _tensors_in(obj: Any, depth: int = 4, seen: set[int] | None = None) -> list[Any]:
    """Tensors held by ``obj`` through dicts, sequences and object attributes (bounded)."""
    import torch

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


def _wrap_cudagraph_call(orig: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(orig)
    def __call__(self: Any, *args: Any, **kwargs: Any) -> Any:
        from vllm_integration.config import capture_audit_enabled

        if not (_installed and capture_audit_enabled() and _will_capture(self)):
            return orig(self, *args, **kwargs)
        session = _session()
        models = session.planned_models()
        if not models:
            return orig(self, *args, **kwargs)
        from derivgraph.audit.runtime.capture import CaptureAudit

        declared: dict[str, Any] = {}
        for i, model in enumerate(models):
            plan = session.plan_for(model)
            declared.update({f"model[{i}].{k}": v for k, v in plan.declared().items()})
        inputs = [*args, *kwargs.values()]
        with CaptureAudit(models, declared=declared, inputs=inputs, pools=_engine_pools(),
                          strict=True, only_while_capturing=True):
            return orig(self, *args, **kwargs)

    return __call__


#: attribute (as in the hook table) -> the wrapper factory for that target.
WRAPPERS: dict[str, Callable[[Callable[..., Any]], Callable[..., Any]]] = {
    "process_weights_after_loading": _wrap_post_load,
    "initialize_layerwise_reload": _wrap_initialize,
    "finalize_layerwise_reload": _wrap_finalize,
    "reload_weights": _wrap_reload_weights,
    "load_checkpoint_weight_patches": _wrap_patches,
    "WeightTransferEngine.__init__": _wrap_engine_init,
    "Worker.wake_up": _wrap_wake_up,
    "CUDAGraphWrapper.__call__": _wrap_cudagraph_call,
    "pack_front": wrap_pack_front,  # Kimi-K3: keeps the packed MoE front on its module
    "KimiLinearForCausalLM.build_specialized_decode": wrap_build_specialized_decode,
}

# ---- installation -----------------------------------------------------------------------------

_lock = threading.RLock()
_installed = False
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
        if not _installed:
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
    global _installed, _hook, _table, _disabled
    with _lock:
        if _installed:
            return False
        _installed, _table, _disabled = True, tuple(table), frozenset(disabled)
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
    global _installed, _hook, _table, _disabled
    with _lock:
        if _hook is not None:
            _hook.remove()
            _hook = None
        for owner, name, original in reversed(_patched):
            if getattr(getattr(owner, name, None), _MARK, False):
                setattr(owner, name, original)
        for model in list(_instrumented):
            if isinstance(model.__dict__.get("load_weights"), _LiveLoadWeights):
                del model.__dict__["load_weights"]
        _instrumented.clear()
        _patched.clear()
        _originals.clear()
        _wrappers.clear()
        _unwrapped.clear()
        _installed, _table, _disabled = False, TABLE, frozenset()


def unwrapped() -> dict[str, str]:
    """Row key -> why that target was left unwrapped (drifted, missing or disabled)."""
    with _lock:
        return dict(_unwrapped)


def is_installed() -> bool:
    """True while the hooks are installed."""
    return _installed


def patched_bindings() -> list[str]:
    """``module.attribute`` of every binding currently patched (for diagnostics)."""
    with _lock:
        return [f"{getattr(o, '__module__', '') + '.' if isinstance(o, type) else ''}"
                f"{getattr(o, '__name__', o)}.{n}" for o, n, _ in _patched]
