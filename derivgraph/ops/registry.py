"""The op registry: every function a formula may call.

Built-in ops wrap torch. A quant method or kernel package adds its own with
:func:`register_op` (e.g. a layout shuffle); formulas can then call it by name. An op is a
plain function of tensors and Python values returning a tensor; ``out=`` gives the variant that
writes into existing storage, used by the reload pass when the result lands directly in a
derived tensor. Ops must also run on ``meta`` tensors (torch ops do), which is how shapes and
dtypes are inferred without touching real data; pass ``infer=`` otherwise.
"""

from __future__ import annotations

import inspect
import operator
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
    return OPS[name]


def dtype_of(value: Any) -> torch.dtype:
    return DTYPES[value] if isinstance(value, str) else value


# ---- arithmetic (formula operators map here) -------------------------------------------------

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


def _binary(name: str, py: Callable[[Any, Any], Any], torch_fn: Callable[..., Any]) -> None:
    def out(a: Any, b: Any, *, out: torch.Tensor) -> Any:
        if not isinstance(a, torch.Tensor):
            return None
        return torch_fn(a, b, out=out)

    register_op(name, lambda a, b: py(a, b), out=out)
    OPS[name].doc = f"{name}(a, b)"


_binary("add", operator.add, torch.add)
_binary("sub", operator.sub, torch.sub)
_binary("mul", operator.mul, torch.mul)
_binary("div", operator.truediv, torch.div)
_binary("pow", operator.pow, torch.pow)
_binary("maximum", torch.maximum, torch.maximum)
_binary("minimum", torch.minimum, torch.minimum)
register_op("floordiv", lambda a, b: a // b)
register_op("neg", lambda a: -a, out=lambda a, *, out: torch.neg(a, out=out))


def _unary(name: str, fn: Callable[..., Any]) -> None:
    register_op(name, lambda x: fn(x), out=lambda x, *, out: fn(x, out=out))
    OPS[name].doc = f"torch.{fn.__name__}(x)"


for _name, _fn in (
    ("reciprocal", torch.reciprocal), ("abs", torch.abs), ("exp", torch.exp), ("log", torch.log),
    ("sqrt", torch.sqrt), ("rsqrt", torch.rsqrt),
    ("sigmoid", torch.sigmoid),  # issue12: Muse Spark residual gate coefficients
):
    _unary(_name, _fn)


@register_op("clamp", out=lambda x, min=None, max=None, *, out: torch.clamp(x, min, max, out=out))
def _clamp(x: torch.Tensor, min: Any = None, max: Any = None) -> torch.Tensor:
    """torch.clamp(x, min, max)."""
    return torch.clamp(x, min, max)


@register_op("amax")
def _amax(x: torch.Tensor, dim: Any = None, keepdim: bool = False) -> torch.Tensor:
    """Largest value (over ``dim``, or all elements)."""
    return torch.amax(x, dim=() if dim is None else dim, keepdim=keepdim)


@register_op("amin")
def _amin(x: torch.Tensor, dim: Any = None, keepdim: bool = False) -> torch.Tensor:
    """Smallest value (over ``dim``, or all elements)."""
    return torch.amin(x, dim=() if dim is None else dim, keepdim=keepdim)


@register_op("sum")
def _sum(x: torch.Tensor, dim: Any = None, keepdim: bool = False) -> torch.Tensor:
    """Sum (over ``dim``, or all elements)."""
    return torch.sum(x) if dim is None else torch.sum(x, dim=dim, keepdim=keepdim)


@register_op("cast")
def _cast(x: torch.Tensor, dtype: Any) -> torch.Tensor:
    """x converted to ``dtype``."""
    return x.to(dtype_of(dtype))


@register_op("clone")
def _clone(x: torch.Tensor) -> torch.Tensor:
    """A copy of x with its own storage."""
    return x.clone()


@register_op("contiguous")
def _contiguous(x: torch.Tensor) -> torch.Tensor:
    """x in contiguous layout (a copy only when needed)."""
    return x.contiguous()


# ---- creation (the plan passes device=) ------------------------------------------------------

@register_op("full", kind="create")
def _full(shape: Any, value: Any, dtype: Any = "float32", device: Any = None) -> torch.Tensor:
    """A tensor of ``shape`` filled with ``value``."""
    return torch.full(tuple(shape), value, dtype=dtype_of(dtype), device=device)


@register_op("ones", kind="create")
def _ones(shape: Any, dtype: Any = "float32", device: Any = None) -> torch.Tensor:
    """A tensor of ones."""
    return torch.ones(tuple(shape), dtype=dtype_of(dtype), device=device)


@register_op("zeros", kind="create")
def _zeros(shape: Any, dtype: Any = "float32", device: Any = None) -> torch.Tensor:
    """A tensor of zeros."""
    return torch.zeros(tuple(shape), dtype=dtype_of(dtype), device=device)


@register_op("full_like")
def _full_like(x: torch.Tensor, value: Any, dtype: Any = None) -> torch.Tensor:
    """Like x, filled with ``value``."""
    return torch.full_like(x, value, dtype=None if dtype is None else dtype_of(dtype))


@register_op("ones_like")
def _ones_like(x: torch.Tensor, dtype: Any = None) -> torch.Tensor:
    """Ones shaped like x."""
    return torch.ones_like(x, dtype=None if dtype is None else dtype_of(dtype))


# ---- joining ---------------------------------------------------------------------------------

@register_op("cat", out=lambda tensors, dim=0, *, out: torch.cat(list(tensors), dim, out=out))
def _cat(tensors: Any, dim: int = 0) -> torch.Tensor:
    """Concatenate a list of tensors along ``dim``."""
    return torch.cat(list(tensors), dim)


@register_op("stack", out=lambda tensors, dim=0, *, out: torch.stack(list(tensors), dim, out=out))
def _stack(tensors: Any, dim: int = 0) -> torch.Tensor:
    """Stack a list of tensors along a new ``dim``."""
    return torch.stack(list(tensors), dim)


# ---- views (allowed in `view` specs) --------------------------------------------------------

@register_op("getitem", kind="view")
def _getitem(x: torch.Tensor, index: Any) -> torch.Tensor:
    """x[index] (slices and integers)."""
    return x[index]


@register_op("view", kind="view")
def _view(x: torch.Tensor, shape: Any) -> torch.Tensor:
    """x.view(shape)."""
    return x.view(tuple(shape))


@register_op("reshape", kind="view")
def _reshape(x: torch.Tensor, shape: Any) -> torch.Tensor:
    """x.reshape(shape) (a view when possible)."""
    return x.reshape(tuple(shape))


@register_op("transpose", kind="view")
def _transpose(x: torch.Tensor, dim0: int, dim1: int) -> torch.Tensor:
    """x.transpose(dim0, dim1)."""
    return x.transpose(dim0, dim1)


@register_op("t", kind="view")
def _t(x: torch.Tensor) -> torch.Tensor:
    """x.t()."""
    return x.t()


@register_op("permute", kind="view")
def _permute(x: torch.Tensor, dims: Any) -> torch.Tensor:
    """x.permute(dims)."""
    return x.permute(tuple(dims))


@register_op("squeeze", kind="view")
def _squeeze(x: torch.Tensor, dim: Any = None) -> torch.Tensor:
    """x.squeeze(dim)."""
    return x.squeeze() if dim is None else x.squeeze(dim)


@register_op("unsqueeze", kind="view")
def _unsqueeze(x: torch.Tensor, dim: int) -> torch.Tensor:
    """x.unsqueeze(dim)."""
    return x.unsqueeze(dim)


@register_op("flatten", kind="view")
def _flatten(x: torch.Tensor, start_dim: int = 0, end_dim: int = -1) -> torch.Tensor:
    """x.flatten(start_dim, end_dim)."""
    return x.flatten(start_dim, end_dim)


@register_op("narrow", kind="view")
def _narrow(x: torch.Tensor, dim: int, start: int, length: int) -> torch.Tensor:
    """x.narrow(dim, start, length)."""
    return x.narrow(dim, start, length)


@register_op("select", kind="view")
def _select(x: torch.Tensor, dim: int, index: int) -> torch.Tensor:
    """x.select(dim, index)."""
    return x.select(dim, index)
