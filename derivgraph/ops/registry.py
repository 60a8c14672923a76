"""The op registry: every function a formula may call.

This module holds the registry only and imports nothing from :mod:`derivgraph.ops`; the
built-in ops (:mod:`.builtin`, :mod:`.index`, :mod:`.layout`, :mod:`.collectives`) register
themselves when ``derivgraph.ops`` is imported. A quant method or kernel package adds its own with
:func:`register_op` (e.g. a layout shuffle); formulas can then call it by name. An op is a
plain function of tensors and Python values returning a tensor; ``out=`` gives the variant that
writes into existing storage, used by the reload pass when the result lands directly in a
derived tensor. Ops must also run on ``meta`` tensors (torch ops do), which is how shapes and
dtypes are inferred without touching real data; pass ``infer=`` otherwise.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from derivgraph.spec.kinds import OpKind

__all__ = ["OPS", "OpDef", "OpKind", "DTYPES", "broadcast_shapes", "dtype_of", "get_op",
           "register_op", "unregister_op"]

DTYPES: dict[str, torch.dtype] = {
    name: getattr(torch, name)
    for name in (
        "float32", "float16", "bfloat16", "float64", "int64", "int32", "int16", "int8", "uint8",
        "bool", "float8_e4m3fn", "float8_e5m2", "float",
    )
    if hasattr(torch, name)
}


@dataclass
class OpDef:
    """A registered op: its function, optional ``out=`` variant, and its kind.

    ``kind`` is ``compute`` (a new tensor), ``view`` (a view of its first argument, allowed in
    ``view`` specs), or ``create`` (a new tensor from shapes and values; it receives ``device``).
    """

    name: str
    fn: Callable[..., Any]
    out: Callable[..., Any] | None = None
    kind: OpKind = OpKind.COMPUTE
    infer: Callable[..., Any] | None = None
    doc: str = ""
    min_args: int = field(init=False)
    max_args: int | None = field(init=False)
    keywords: frozenset[str] = field(init=False)

    def __post_init__(self) -> None:
        self.kind = OpKind(self.kind)
        params = list(inspect.signature(self.fn).parameters.values())
        positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        self.min_args = sum(1 for p in positional if p.default is p.empty)
        varargs = any(p.kind == p.VAR_POSITIONAL for p in params)
        self.max_args = None if varargs else len(positional)
        self.keywords = frozenset(
            p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
        )
        if not self.doc:
            self.doc = (inspect.getdoc(self.fn) or "").split("\n")[0]

    def signature(self) -> str:
        """``name(arg, arg=default, ...)`` without annotations (``device`` is filled in)."""
        parts = []
        for p in inspect.signature(self.fn).parameters.values():
            if p.name == "device":
                continue
            text = f"*{p.name}" if p.kind == p.VAR_POSITIONAL else p.name
            if p.default is not p.empty:
                text += f"={p.default!r}"
            parts.append(text)
        return f"{self.name}({', '.join(parts)})"


OPS: dict[str, OpDef] = {}


def register_op(
    name: str,
    fn: Callable[..., Any] | None = None,
    *,
    out: Callable[..., Any] | None = None,
    kind: OpKind | str = OpKind.COMPUTE,
    infer: Callable[..., Any] | None = None,
    replace: bool = False,
) -> Any:
    """Register ``fn`` as formula op ``name`` (usable as a decorator).

    ``out(*args, out=tensor, **kwargs)`` writes the result into ``tensor``. ``infer`` computes
    the result on ``meta`` tensors when ``fn`` cannot. Re-registering a name needs
    ``replace=True``.
    """

    def deco(func: Callable[..., Any]) -> Callable[..., Any]:
        if name in OPS and not replace:
            raise ValueError(
                f"op {name!r} is already registered ({OPS[name].fn!r}); pass replace=True to "
                "override it or choose another name"
            )
        OPS[name] = OpDef(name, func, out=out, kind=kind, infer=infer)
        return func

    return deco(fn) if fn is not None else deco


def unregister_op(name: str) -> None:
    """Remove a registered op (for tests and plugins that unload)."""
    OPS.pop(name, None)


def get_op(name: str) -> OpDef:
    """The registered op ``name`` (``KeyError`` if there is none)."""
    return OPS[name]


def dtype_of(value: Any) -> torch.dtype:
    """A dtype named in a formula (``"float32"``) as a ``torch.dtype``; dtypes pass through."""
    if isinstance(value, torch.dtype):
        return value
    if isinstance(value, str) and value in DTYPES:
        return DTYPES[value]
    raise ValueError(f"unknown dtype {value!r}; use one of {', '.join(sorted(DTYPES))}")


def broadcast_shapes(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    """NumPy broadcasting of plain int shapes (``torch.broadcast_shapes`` imports sympy)."""
    nd = max(len(s) for s in shapes)
    out = [1] * nd
    for shape in shapes:
        for i, n in enumerate(shape, nd - len(shape)):
            if n != 1:
                if out[i] not in (1, n):
                    raise RuntimeError(f"shapes {list(shapes)} cannot be broadcast together")
                out[i] = n
    for shape in shapes:  # a 0-size dim broadcasts only against 1
        for i, n in enumerate(shape, nd - len(shape)):
            if n == 0 and out[i] != 0:
                out[i] = 0
    return tuple(out)
