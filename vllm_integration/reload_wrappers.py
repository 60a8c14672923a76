"""The wrappers around vLLM's load and reload paths: each reports to
:mod:`vllm_integration.session` (see the table in :mod:`vllm_integration.hooks`).

The post-load step compiles or refills a model's plan; layerwise reloads, ``reload_weights``,
checkpoint patches, a weight-transfer engine's update and ``Worker.wake_up`` open and close a
reload session; a planned model's own ``load_weights`` becomes a live in-place update.
"""

from __future__ import annotations

import functools
import inspect
import logging
import weakref
from collections.abc import Callable, Iterable, Iterator
from types import ModuleType
from typing import Any

from vllm_integration.hook_state import active

__all__ = [
    "release_models", "wrap_engine_init", "wrap_finalize", "wrap_initialize", "wrap_patches",
    "wrap_post_load", "wrap_reload_weights", "wrap_wake_up",
]

logger = logging.getLogger(__name__)


@functools.cache
def _session() -> ModuleType:
    """:mod:`vllm_integration.session`, imported on the first call (torch at plugin load) and
    cached: every hook asks for it on every reload, and a function-level ``from`` import runs
    the import system's Python code each time."""
    from vllm_integration import session

    return session


def _arg(args: tuple[Any, ...], kwargs: dict[str, Any], index: int, name: str) -> Any:
    return args[index] if len(args) > index else kwargs.get(name)


def _aborting_on_error(model: Any, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call ``fn``; if it raises, abort the model's reload session and re-raise."""
    try:
        return fn(*args, **kwargs)
    except BaseException:
        _session().abort(model)
        raise


def wrap_post_load(orig: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(orig)
    def process_weights_after_loading(*args: Any, **kwargs: Any) -> Any:
        result = orig(*args, **kwargs)
        if active():
            model = _arg(args, kwargs, 0, "model")
            from vllm_integration import groups  # lazy: torch and vLLM at plugin load

            groups.register_vllm_groups()  # vLLM's tp/dcp/ep groups, before a compile
            # the live load_weights goes in before the guard's snapshot: were it installed
            # after, every reload's guard would find it as a new object and walk it
            _session().on_post_load(model, prepare=_instrument_model)
            _instrument_model(model)  # a plan compiled earlier (attach by hand): once
        return result

    return process_weights_after_loading


def wrap_initialize(orig: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(orig)
    def initialize_layerwise_reload(*args: Any, **kwargs: Any) -> Any:
        model = _arg(args, kwargs, 0, "model")
        if active():
            _session().begin(model, "layerwise", layerwise=True)
        return _aborting_on_error(model, orig, *args, **kwargs)

    return initialize_layerwise_reload


def wrap_finalize(orig: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(orig)
    def finalize_layerwise_reload(*args: Any, **kwargs: Any) -> Any:
        model = _arg(args, kwargs, 0, "model")
        result = _aborting_on_error(model, orig, *args, **kwargs)
        if active():  # every layer is placed back: refill the startup storage
            _session().end(model, layerwise=True)
        return result

    return finalize_layerwise_reload


def _recording(weights: Iterable[tuple[str, Any]], sink: list[str],
               model: Any = None) -> Iterator[tuple[str, Any]]:
    """Pass weights through, recording names (and, for ``model``, fold sources' values)."""
    note = _session().witness_note(model) if model is not None else None  # once per load
    append = sink.append
    if note is None:  # no fold sources to witness: names only
        for name, tensor in weights:
            append(name)
            yield name, tensor
        return
    for name, tensor in weights:
        append(name)
        note(name, tensor)
        yield name, tensor


class _Arguments:
    """Reads and replaces a wrapped function's arguments by name without binding a signature
    per call (``inspect.Signature.bind`` costs more than the rest of a wrapper)."""

    def __init__(self, fn: Callable[..., Any]):
        self.signature = inspect.signature(fn)
        kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
        self.simple = all(p.kind in kinds for p in self.signature.parameters.values())
        self.position = {name: i for i, (name, p) in enumerate(self.signature.parameters.items())
                         if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD}

    def get(self, args: tuple[Any, ...], kwargs: dict[str, Any], name: str,
            default: Any = None) -> Any:
        """The argument ``name`` as passed (``default`` when it was not)."""
        i = self.position.get(name)
        return args[i] if i is not None and i < len(args) else kwargs.get(name, default)

    def replace(self, args: tuple[Any, ...], kwargs: dict[str, Any], name: str,
                value: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """``(args, kwargs)`` with the passed argument ``name`` replaced by ``value``."""
        i = self.position.get(name)
        if i is not None and i < len(args):
            return (*args[:i], value, *args[i + 1:]), kwargs
        return args, {**kwargs, name: value}


def wrap_reload_weights(orig: Callable[..., Any]) -> Callable[..., Any]:
    arguments = _Arguments(orig)

    @functools.wraps(orig)
    def reload_weights(*args: Any, **kwargs: Any) -> Any:
        if not active():
            return orig(*args, **kwargs)
        if not arguments.simple:  # *args or **kwargs in the signature: bind it
            bound = arguments.signature.bind(*args, **kwargs)
            args, kwargs = bound.args, bound.kwargs
        model = arguments.get(args, kwargs, "model")
        kernel_format = not arguments.get(args, kwargs, "is_checkpoint_format", True)
        names: list[str] = []
        weights = arguments.get(args, kwargs, "weights_iterator")
        if weights is not None:
            args, kwargs = arguments.replace(args, kwargs, "weights_iterator",
                                             _recording(weights, names, model))
        session = _session()
        # checkpoint format: vLLM hands this iterator to the model's load_weights, whose live
        # wrapper then passes it through instead of recording every weight a second time
        session.begin(model, "kernel-format" if kernel_format else "checkpoint-format",
                      records=weights is not None and not kernel_format)
        result = _aborting_on_error(model, orig, *args, **kwargs)
        # kernel format: the names are runtime names (vLLM copies into get_parameter(name))
        session.note_names(model, names, runtime=kernel_format)
        session.end(model)
        return result

    return reload_weights


def wrap_patches(orig: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(orig)
    def load_checkpoint_weight_patches(*args: Any, **kwargs: Any) -> Any:
        if not active():
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
        if active():
            _session().begin(model, "weight-transfer", restart=True)
        return _aborting_on_error(model, start, *args, **kwargs)

    @functools.wraps(update)
    def update_weights(update_info: Any, *args: Any, **kwargs: Any) -> Any:
        model = engine.model
        result = _aborting_on_error(model, update, update_info, *args, **kwargs)
        names = update_info.get("names") if isinstance(update_info, dict) else None
        if active() and names:
            _session().note_names(model, [str(n) for n in names], runtime=False)
        return result

    @functools.wraps(finish)
    def finish_weight_update(*args: Any, **kwargs: Any) -> Any:
        model = engine.model  # read before: the worker re-targets the engine afterwards
        result = _aborting_on_error(model, finish, *args, **kwargs)
        if active():
            _session().end(model)
        return result

    engine.start_weight_update = start_weight_update
    engine.update_weights = update_weights
    engine.finish_weight_update = finish_weight_update
    engine._derivgraph_instrumented = True


def wrap_engine_init(orig: Callable[..., Any]) -> Callable[..., Any]:
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
    records names, or passes the weights through where the session records them already
    (``reload_weights`` in checkpoint format); a call on a live model opens its own session,
    and closing it recomputes the derived tensors that the loaded names feed (vLLM reruns no
    post-load step there).
    """

    __slots__ = ("_load", "_model")

    def __init__(self, model: Any, load: Callable[..., Any]):
        self._model = weakref.ref(model)
        self._load = load

    def __call__(self, weights: Iterable[tuple[str, Any]], *args: Any, **kwargs: Any) -> Any:
        model = self._model()
        session = _session()
        if model is None or not active() or session.recording(model):
            # inside a reload that records these weights already, a scope of its own would only
            # count depth: the outer scope's end (or its abort on an error) completes it
            return self._load(model, weights, *args, **kwargs)
        names: list[str] = []
        session.begin(model, "load-weights")
        result = _aborting_on_error(model, self._load, model,
                                    _recording(weights, names, model), *args, **kwargs)
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


def wrap_wake_up(orig: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(orig)
    def wake_up(self: Any, tags: list[str] | None = None, *args: Any, **kwargs: Any) -> Any:
        result = orig(self, tags, *args, **kwargs)
        if active() and (tags is None or "weights" in tags):
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


def release_models() -> None:
    """Remove the live ``load_weights`` from every instrumented model (on uninstall)."""
    for model in list(_instrumented):
        if isinstance(model.__dict__.get("load_weights"), _LiveLoadWeights):
            del model.__dict__["load_weights"]
    _instrumented.clear()
