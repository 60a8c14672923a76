"""The built-in ops: thin wrappers of torch functions, registered on import.

Formula operators (``+ - * / // **``, unary ``-``) map to ``add`` ... ``neg``; creation ops
receive ``device=`` from the compiler; ``view`` ops are the ones a ``kind: view`` formula may
use.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import torch

from derivgraph.errors import IndexOutOfRange
from derivgraph.ops.registry import OPS, dtype_of, register_op

__all__: list[str] = []


# ---- arithmetic (formula operators map here) -------------------------------------------------

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
    ("sigmoid", torch.sigmoid),
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

def _check_int_indices(x: torch.Tensor, index: Any) -> None:
    """Integer indices within their dims (meta tensors do not check bounds themselves)."""
    items = index if isinstance(index, tuple) else (index,)
    if len(items) > x.dim():
        raise IndexError(f"too many indices ({len(items)}) for a {x.dim()}-d tensor")
    for dim, i in enumerate(items):
        if isinstance(i, int) and not isinstance(i, bool) and not -x.shape[dim] <= i < \
                x.shape[dim]:
            raise IndexOutOfRange(f"index {i} is out of bounds for dim {dim} of size "
                                  f"{x.shape[dim]}")


def _getitem_infer(x: torch.Tensor, index: Any) -> torch.Tensor:
    _check_int_indices(x, index)
    return x[index]


@register_op("getitem", kind="view", infer=_getitem_infer)
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
