"""The plugin's switches (environment variables) and its spec library.

* ``DERIVGRAPH_VLLM_MODE`` — ``off`` | ``refill`` (default) | ``recompute`` | ``strict``;
  read on every hook call, so a process can change it between reloads.
* ``DERIVGRAPH_SPECS`` — extra spec files or folders, separated by ``os.pathsep`` (``:`` on
  Linux), loaded on top of :func:`derivgraph.default_specs` (built-in + entry points).
* ``DERIVGRAPH_CAPTURE_AUDIT`` — ``0`` turns off the capture-time pointer audit that
  ``strict`` mode runs around every CUDA graph vLLM captures (default on in ``strict``).
* ``DERIVGRAPH_GUARD`` — ``0`` turns off the guard that keeps every tensor no spec declares
  at its startup storage across reloads (:mod:`vllm_integration.guarding`; default on).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from torch import nn

    from derivgraph import Spec

__all__ = [
    "CAPTURE_AUDIT_ENV", "MODES", "MODE_ENV", "SPECS_ENV", "capture_audit_enabled",
    "current_mode", "env_flag", "environ_value", "spec_library", "specs_for",
]

MODE_ENV = "DERIVGRAPH_VLLM_MODE"
SPECS_ENV = "DERIVGRAPH_SPECS"
CAPTURE_AUDIT_ENV = "DERIVGRAPH_CAPTURE_AUDIT"
MODES = ("off", "refill", "recompute", "strict")
DEFAULT_MODE = "refill"

_library_cache: dict[str, list[Any]] = {}


def _environ_reader() -> Callable[[str], str]:
    """``name -> os.environ.get(name, "")``, read on every call.

    ``os.environ.get`` encodes the key and walks ``Mapping.get`` in Python (~2-5 us; a reload
    asks for the mode about eight times). On CPython's POSIX ``os._Environ`` this reads the
    mapping's own dict under the key encoded once per name: the same value (``os.environ``'s
    writes store into that dict), a fraction of the cost. Elsewhere, or once ``os.environ``
    is replaced by another object: ``os.environ.get``.
    """
    environ = os.environ
    data = getattr(environ, "_data", None)
    encode = getattr(environ, "encodekey", None)
    decode = getattr(environ, "decodevalue", None)
    if os.name != "posix" or type(environ) is not os._Environ or not isinstance(data, dict) \
            or encode is None or decode is None:
        return lambda name: environ.get(name, "")
    keys: dict[str, Any] = {}
    values: dict[Any, str] = {}  # raw -> decoded, for the few values a switch takes

    def read(name: str) -> str:
        if os.environ is not environ:  # replaced wholesale (a test's stand-in): read that
            return os.environ.get(name, "")
        key = keys.get(name)
        if key is None:
            key = keys[name] = encode(name)
        raw = data.get(key)
        if raw is None:
            return ""
        value = values.get(raw)
        if value is None:
            value = decode(raw)
            if len(values) < 64:
                values[raw] = value
        return value

    return read


#: reads one environment variable now ("" when unset); see :func:`_environ_reader`
environ_value: Callable[[str], str] = _environ_reader()

_parsed_modes: dict[str, str] = {}  # raw DERIVGRAPH_VLLM_MODE value -> its valid mode


def current_mode() -> str:
    """The mode from ``DERIVGRAPH_VLLM_MODE``; raises ``ValueError`` on an unknown value.

    Read on every call (a process may change it between reloads); each raw value is parsed
    once (every hook asks, so the read is one dict lookup of the environment and one of the
    parsed values).
    """
    raw = environ_value(MODE_ENV)
    mode = _parsed_modes.get(raw)
    if mode is None:
        mode = raw.strip().lower() or DEFAULT_MODE
        if mode not in MODES:
            raise ValueError(
                f"{MODE_ENV}={mode!r} is not a derivgraph mode; set it to one of "
                f"{', '.join(MODES)} (default {DEFAULT_MODE})"
            )
        _parsed_modes[raw] = mode
    return mode


_FLAGS = {"1": True, "true": True, "yes": True, "on": True,
          "0": False, "false": False, "no": False, "off": False}
_parsed_flags: dict[str, bool | None] = {}  # raw value -> its flag


def env_flag(name: str) -> bool | None:
    """A boolean switch: True for 1 / true / yes / on, False for 0 / false / no / off, None
    when unset or anything else (the caller's default). Read on every call; each raw value is
    parsed once."""
    raw = environ_value(name)
    if raw in _parsed_flags:
        return _parsed_flags[raw]
    flag = _FLAGS.get(raw.strip().lower())
    if len(_parsed_flags) < 64:
        _parsed_flags[raw] = flag
    return flag


def capture_audit_enabled() -> bool:
    """True in ``strict`` mode unless ``DERIVGRAPH_CAPTURE_AUDIT=0``."""
    return current_mode() == "strict" and env_flag(CAPTURE_AUDIT_ENV) is not False


def extra_spec_paths() -> list[str]:
    """Paths named in ``DERIVGRAPH_SPECS``."""
    return [p for p in os.environ.get(SPECS_ENV, "").split(os.pathsep) if p.strip()]


def spec_library() -> list[Spec]:
    """Built-in and entry-point specs plus ``DERIVGRAPH_SPECS``; cached per env value."""
    from derivgraph import (  # lazy: derivgraph (pydantic) at plugin load
        Rule,
        SourceLocation,
        SpecIssue,
        SpecValidationError,
        default_specs,
        load_specs,
    )

    key = os.environ.get(SPECS_ENV, "")
    if key not in _library_cache:
        paths = extra_spec_paths()
        missing = [p for p in paths if not os.path.exists(p)]
        if missing:
            raise SpecValidationError([SpecIssue(
                Rule.SCHEMA, f"{SPECS_ENV} names {p}, which does not exist",
                f"fix the path or remove it from {SPECS_ENV} (paths are separated by "
                f"{os.pathsep!r})", SourceLocation(p)) for p in missing])
        _library_cache.clear()
        _library_cache[key] = [*default_specs(), *load_specs(paths)]
    return list(_library_cache[key])


def specs_for(model: nn.Module, specs: list[Spec]) -> list[Spec]:
    """Drop specs whose target classes occur nowhere in ``model`` (a cheap pre-filter).

    Binding checks every spec against every module; a model with thousands of modules and a
    large library would pay for that on every load even when nothing matches.
    """
    from derivgraph.paths import class_names  # lazy: derivgraph at plugin load

    modules: set[str] = set()
    methods: set[str] = set()
    seen_modules: set[type] = set()
    seen_methods: set[type] = set()
    for module in model.modules():
        if type(module) not in seen_modules:
            seen_modules.add(type(module))
            modules |= class_names(module)
        qm = getattr(module, "quant_method", None)
        if qm is not None and type(qm) not in seen_methods:
            seen_methods.add(type(qm))
            methods |= class_names(qm)
    keep = []
    for spec in specs:
        target = spec.target
        if target.module_class and not set(target.module_class) & modules:
            continue
        if target.quant_method_class and not set(target.quant_method_class) & methods:
            continue
        keep.append(spec)
    return keep
