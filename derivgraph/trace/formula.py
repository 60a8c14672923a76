"""Turn a recorded op graph into a formula of the spec language.

:func:`Emitter.emit` walks from a stored tensor back through the recorded nodes to leaves:
a leaf is a *source* (a parameter or buffer the post-load step did not derive, named by its
path from the target module) or a tensor that depends on no weight at all, which becomes a
constant (``full([E], K, dtype=int64)``, read back from its value). Each aten op maps to one op
of our vocabulary (``derivgraph ops``); an op outside it raises :class:`Unexpressible` with the
aten name, to be registered with ``derivgraph.register_op``. Integers in shapes, fill values and
slice bounds are named after config attributes or parameter shapes of the target module
(``E: w13_weight.shape[0]``), so one spec fits every instance of the class.
"""

from __future__ import annotations

import fnmatch
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from derivgraph.errors import Unexpressible
from derivgraph.trace.recorder import Node, Recorder, Ref, is_creation, is_overwrite

__all__ = ["Emitter", "Formula", "IntNamer", "Unexpressible", "constant_formula", "dtype_name",
           "python_path"]

_ATOM, _POW, _UNARY, _MUL, _ADD = 100, 8, 7, 6, 5
_SENTINEL_END = 2 ** 62


@dataclass(frozen=True)
class Formula:
    """Formula text, its precedence (for parentheses) and the source paths it reads."""

    text: str
    prec: int = _ATOM
    sources: frozenset[str] = frozenset()
    identity_of: str | None = None  # set when the formula is exactly one source, unchanged


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _lit(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isinf(value) or math.isnan(value):
            raise Unexpressible(f"a non-finite constant {value!r}")
        return repr(value)
    if isinstance(value, torch.dtype):
        return dtype_name(value)
    raise Unexpressible(f"a literal of type {type(value).__name__}")


class IntNamer:
    """Names integers after the target module's int attributes and parameter shapes."""

    def __init__(self, module: nn.Module | None,
                 is_source: Callable[[torch.Tensor], bool] | None = None):
        self.candidates: list[tuple[int, str, str]] = []  # (value, param name, expression)
        self.used: dict[str, str] = {}
        #: name used -> every expression of equal value it could have been (a tie: ambiguous)
        self.ambiguous: dict[str, list[str]] = {}
        if module is None:
            return
        for key, value in vars(module).items():
            if type(value) is int and not key.startswith("_") and value >= 2:
                self.candidates.append((value, key, key))
        for pname, p in [*module.named_parameters(), *module.named_buffers()]:
            if is_source is not None and not is_source(p):
                continue  # a tensor the step derived: its shape is not an input
            short = re.sub(r"\W", "_", pname)
            for i, size in enumerate(p.shape):
                if size >= 2:
                    expr = python_path(pname)
                    self.candidates.append((size, f"{short}_d{i}", f"{expr}.shape[{i}]"))

    def __call__(self, value: int) -> str:
        if type(value) is not int or value < 2:
            return _lit(value)
        for want, mult in ((value, 1), (value // 2, 2)):
            if mult == 2 and value % 2:
                break
            hits = [(name, expr) for v, name, expr in self.candidates if v == want]
            if hits:
                name, expr = hits[0]
                self.used[name] = expr
                exprs = list(dict.fromkeys(e for _, e in hits))
                if len(exprs) > 1:  # equal here; another instance may tell them apart
                    self.ambiguous[name] = exprs
                return name if mult == 1 else f"2 * {name}"
        return str(value)


def constant_formula(t: torch.Tensor, ints: Callable[[int], str]) -> Formula:
    """A tensor that depends on no weight, written from its value: ``full`` or a ``cat`` of
    ``full`` columns (CUTLASS ``s_strides``: ``[[2N, 0]] * E``)."""
    if t.is_complex() or t.numel() == 0:
        raise Unexpressible("a constant tensor that is empty or complex")
    dtype = dtype_name(t.dtype)
    flat = t.detach().reshape(-1)

    def fill(v: Any) -> str:
        return ints(int(v)) if not t.dtype.is_floating_point and t.dtype != torch.bool else _lit(v)

    def shape_text(shape: tuple[int, ...]) -> str:
        return "[" + ", ".join(ints(int(s)) for s in shape) + "]"

    if bool((flat == flat[0]).all()):
        return Formula(f"full({shape_text(tuple(t.shape))}, {fill(flat[0].item())}, "
                       f"dtype={dtype})")
    if t.dim() == 2 and t.shape[1] <= 8 and bool((t == t[0:1]).all()):
        cols = ", ".join(f"full({shape_text((t.shape[0], 1))}, {fill(v.item())}, dtype={dtype})"
                         for v in t[0])
        return Formula(f"cat([{cols}], 1)")
    raise Unexpressible("a constant tensor with varying values (no formula writes it)")


def _wrap(f: Formula, prec: int) -> str:
    return f.text if f.prec >= prec else f"({f.text})"


@dataclass
class Emitter:
    """Formulas for refs of one recording, relative to one target module."""

    recorder: Recorder
    names: dict[int, str]  # id(tensor) -> path from the target module (sources only)
    addresses: dict[tuple[Any, ...], str]  # storage address -> path, for detached copies
    ints: IntNamer
    module_params: list[str] = field(default_factory=list)  # for each('pattern')

    # ---- leaves ----------------------------------------------------------------------------
    def _leaf(self, ref: Ref) -> Formula | None:
        t = ref.tensor
        name = self.names.get(id(t))
        if name is None and t.device.type != "meta":
            name = self.addresses.get(address_key(t))
        if name is not None:
            return Formula(python_path(name), _ATOM, frozenset({name}), identity_of=name)
        return None

    def emit(self, ref: Ref) -> Formula:
        leaf = self._leaf(ref)
        if leaf is not None:
            return leaf
        if not self.recorder.is_weighty(ref) and not self._reads_source(ref, set()):
            return constant_formula(ref.tensor, self.ints)
        if ref.producer is None:
            raise Unexpressible("reads a tensor that is neither a parameter or buffer of the "
                                "target module nor computed by the recorded step")
        return self._op(ref.producer, ref.index)

    def _reads_source(self, ref: Ref, seen: set[int]) -> bool:
        """Whether a source tensor feeds ``ref`` (a value read through ``.tolist()`` makes
        the recording look weight-free; a source in the graph says otherwise)."""
        if id(ref.tensor) in self.names:
            return True
        node = ref.producer
        if node is None or id(node) in seen or is_creation(node.func):
            return False
        seen.add(id(node))
        inputs = [r for r in _refs(node.args) + _refs(node.kwargs)]
        if is_overwrite(node.func):
            inputs = inputs[1:]  # the target's old value is not read
        return any(self._reads_source(r, seen) for r in inputs)

    def _arg(self, a: Any) -> Formula:
        if isinstance(a, Ref):
            return self.emit(a)
        if isinstance(a, (list, tuple)):
            return Formula("[" + ", ".join(self._arg(x).text for x in a) + "]")
        return Formula(_lit(a))

    # ---- ops -------------------------------------------------------------------------------
    def _op(self, node: Node, index: int) -> Formula:  # noqa: C901 - one table
        name, a, kw = node.name, node.args, node.kwargs
        if name in ("detach", "alias", "lift_fresh", "_to_copy") and (
            name != "_to_copy" or _same_dtype(node)
        ):
            return self.emit(a[0])
        if name in ("_to_copy",):
            if set(kw) - {"dtype", "device", "layout", "pin_memory"}:
                raise Unexpressible(f"{node.overload} with {sorted(kw)}", node.overload)
            x = self.emit(a[0])
            return self._call("cast", x, Formula(dtype_name(kw["dtype"])))
        if name == "clone":
            fmt = kw.get("memory_format")
            return self._call("contiguous" if fmt == torch.contiguous_format else "clone",
                              self.emit(a[0]))
        binary = {"mul": ("*", _MUL), "div": ("/", _MUL), "add": ("+", _ADD),
                  "sub": ("-", _ADD)}
        if name in binary:
            if kw.get("rounding_mode") or kw.get("alpha", 1) != 1 or len(a) > 2:
                raise Unexpressible(f"{node.overload} with {kw or a[2:]}", node.overload)
            if (name == "mul" and a[1] in (1, 1.0) and isinstance(a[0], Ref)
                    and a[0].producer is not None and a[0].producer.name == "reciprocal"
                    and self._leaf(a[0]) is None):
                # eager `1.0 / x` runs reciprocal(x) * 1.0, and x * 1.0 is x bit for bit;
                # a formula `1.0 / x` may divide instead, which can differ in the last bit
                return self._call("reciprocal", self.emit(a[0].producer.args[0]))
            x, y = self._arg(a[0]), self._arg(a[1])
            sym, prec = binary[name]
            right_prec = prec + 1  # a - (b - c), a / (b * c)
            return Formula(f"{_wrap(x, prec)} {sym} {_wrap(y, right_prec)}", prec,
                           x.sources | y.sources)
        if name == "rsub":
            x, y = self._arg(a[0]), self._arg(a[1])
            return Formula(f"{_wrap(y, _ADD)} - {_wrap(x, _ADD + 1)}", _ADD, x.sources | y.sources)
        if name == "pow" and isinstance(a[0], Ref) is not False and not isinstance(a[1], Ref):
            x = self.emit(a[0])
            return Formula(f"{_wrap(x, _POW + 1)} ** {_lit(a[1])}", _POW, x.sources)
        if name == "neg":
            x = self.emit(a[0])
            return Formula(f"-{_wrap(x, _UNARY)}", _UNARY, x.sources)
        if name in ("reciprocal", "abs", "exp", "log", "sqrt", "rsqrt", "t", "maximum",
                    "minimum"):
            return self._call(name, *(self._arg(x) for x in a))
        if name in ("clamp", "clamp_min", "clamp_max"):
            x = self.emit(a[0])
            lo = a[1] if name != "clamp_max" else None
            hi = (a[2] if len(a) > 2 else kw.get("max")) if name == "clamp" else (
                a[1] if name == "clamp_max" else None)
            if isinstance(lo, Ref) or isinstance(hi, Ref):
                raise Unexpressible("clamp with tensor bounds", node.overload)
            return self._call("clamp", x, Formula(_lit(lo)), Formula(_lit(hi)))
        if name in ("amax", "amin", "sum", "max", "min"):
            return self._reduction(node, index)
        if name in ("cat", "stack"):
            dim = a[1] if len(a) > 1 else kw.get("dim", 0)
            return self._call(name, self._gather(list(a[0])), Formula(_lit(dim)))
        if name in ("view", "_unsafe_view", "reshape"):
            broadcast = _block_broadcast(node)
            if broadcast is not None:  # vLLM's block-scale expansion (scaled_dequantize)
                shape = "[" + ", ".join(_lit(int(v)) for v in a[1]) + "]"
                return self._call("group_broadcast", self.emit(broadcast), Formula(shape))
            x = self.emit(a[0])
            return self._call("reshape", x, Formula("[" + ", ".join(_lit(int(s)) for s in a[1])
                                                    + "]"))
        if name == "squeeze":
            x = self.emit(a[0])
            if len(a) == 1:
                return self._call("squeeze", x)
            dims = a[1] if isinstance(a[1], (list, tuple)) else [a[1]]
            if len(dims) != 1:
                raise Unexpressible("squeeze over several dims", node.overload)
            return self._call("squeeze", x, Formula(_lit(dims[0])))
        if name in ("unsqueeze", "transpose", "permute", "select", "flatten"):
            return self._call(name, *(self._arg(x) for x in a))
        if name == "slice":
            return self._slice(node)
        if name in ("split", "split_with_sizes"):
            return self._split(node, index)
        if name == "repeat" and a[0].tensor.numel() == 1:
            # x.repeat(E) of one value: x * ones([E]) is the same bits (x * 1 == x)
            x = self.emit(a[0])
            sizes = "[" + ", ".join(self.ints(int(v)) for v in a[1]) + "]"
            return Formula(f"{_wrap(x, _MUL)} * ones({sizes}, dtype="
                           f"{dtype_name(a[0].tensor.dtype)})", _MUL, x.sources)
        raise Unexpressible(f"aten op {node.overload} is not in the formula vocabulary",
                            node.overload)

    def _call(self, op: str, *args: Formula) -> Formula:
        sources = frozenset().union(*(x.sources for x in args)) if args else frozenset()
        return Formula(f"{op}({', '.join(x.text for x in args)})", _ATOM, sources)

    def _reduction(self, node: Node, index: int) -> Formula:
        name, a, kw = node.name, node.args, node.kwargs
        x = self.emit(a[0])
        op = {"max": "amax", "min": "amin"}.get(name, name)
        if name in ("max", "min") and len(a) > 1:  # max.dim -> (values, indices)
            if index != 0:
                raise Unexpressible(f"{node.overload} indices (argmax)", node.overload)
            keep = a[2] if len(a) > 2 else kw.get("keepdim", False)
            return self._call(op, x, Formula(_lit(a[1])), Formula(_lit(bool(keep))))
        dims = a[1] if len(a) > 1 else kw.get("dim")
        keep = a[2] if len(a) > 2 else kw.get("keepdim", False)
        if kw.get("dtype") is not None:
            raise Unexpressible(f"{node.overload} with dtype", node.overload)
        if not dims:
            return self._call(op, x)
        dims_text = "[" + ", ".join(_lit(d) for d in dims) + "]"
        return self._call(op, x, Formula(dims_text), Formula(_lit(bool(keep))))

    def _slice(self, node: Node) -> Formula:
        a = node.args
        dim = a[1] if len(a) > 1 else 0
        start = a[2] if len(a) > 2 else None
        end = a[3] if len(a) > 3 else None
        step = a[4] if len(a) > 4 else 1
        return self._slice_of(a[0], dim, start, end, step)

    def _split(self, node: Node, index: int) -> Formula:
        """Output ``index`` of ``split``/``split_with_sizes``: a slice along ``dim``."""
        a, kw = node.args, node.kwargs
        dim = a[2] if len(a) > 2 else kw.get("dim", 0)
        size = a[0].tensor.shape[dim]
        spec = a[1]
        sizes = list(spec) if isinstance(spec, (list, tuple)) else [
            min(spec, size - i) for i in range(0, size, spec)]
        start = sum(sizes[:index])
        end = start + sizes[index]
        return self._slice_of(a[0], dim, start or None, None if end >= size else end, 1)

    def _slice_of(self, src: Ref, dim: int, start: Any, end: Any, step: int) -> Formula:
        base = self.emit(src)
        dim = dim % src.tensor.dim()
        size = src.tensor.shape[dim]
        lo = "" if not start else self.ints(int(start))
        hi = "" if end is None or end >= min(size, _SENTINEL_END) else self.ints(int(end))
        if lo and hi and isinstance(start, int) and isinstance(end, int):
            width = end - start
            named = self.ints(width)
            if not named.isdigit():
                hi = f"{lo} + {named}"
        piece = f"{lo}:{hi}" + ("" if step == 1 else f":{step}")
        index = ", ".join([":"] * dim + [piece])
        return Formula(f"{_wrap(base, _ATOM)}[{index}]", _ATOM, base.sources)

    def _gather(self, refs: list[Ref]) -> Formula:
        """A list of tensors; over layers, ``[f(w) for w in each('layers.*.x')]``."""
        items = [self.emit(r) for r in refs]
        comp = self._comprehension(refs, items)
        if comp is not None:
            return comp
        return Formula("[" + ", ".join(i.text for i in items) + "]", _ATOM,
                       frozenset().union(*(i.sources for i in items)))

    def _comprehension(self, refs: list[Ref], items: list[Formula]) -> Formula | None:
        if len(items) < 2 or any(len(i.sources) != 1 for i in items):
            return None
        paths = [next(iter(i.sources)) for i in items]
        pattern = _glob_of(paths)
        if pattern is None:
            return None
        if [p for p in _natural(self.module_params) if fnmatch.fnmatchcase(p, pattern)
                and p.count(".") == pattern.count(".")] != paths:
            return None
        var = "w"
        saved = dict(self.names)
        templates = set()
        for ref, path in zip(refs, paths):
            self.names = {k: (var if v == path else v) for k, v in saved.items()}
            addresses = self.addresses
            self.addresses = {k: (var if v == path else v) for k, v in addresses.items()}
            try:
                templates.add(self.emit(ref).text)
            finally:
                self.names, self.addresses = saved, addresses
        if len(templates) != 1:
            return None
        return Formula(f"[{templates.pop()} for {var} in each('{pattern}')]", _ATOM,
                       frozenset(paths))


def _repeat_step(node: Node) -> Ref | None:
    """``y`` when ``node`` is ``view(clone(expand(unsqueeze(y, d + 1), ...)), shape)`` that
    repeats each element of ``y`` ``k`` times along ``d`` (``repeat_interleave``)."""
    if node.name not in ("view", "_unsafe_view", "reshape") or not isinstance(node.args[0], Ref):
        return None
    clone = node.args[0].producer
    if clone is None or clone.name != "clone" or not isinstance(clone.args[0], Ref):
        return None
    expand = clone.args[0].producer
    if expand is None or expand.name != "expand" or not isinstance(expand.args[0], Ref):
        return None
    unsq = expand.args[0].producer
    if unsq is None or unsq.name != "unsqueeze" or not isinstance(unsq.args[0], Ref):
        return None
    y = unsq.args[0]
    ys = list(y.tensor.shape)
    inner = unsq.args[1] % (len(ys) + 1)
    if inner == 0:
        return None
    sizes = [int(v) for v in expand.args[1]]
    k = sizes[inner] if len(sizes) == len(ys) + 1 else -1
    if k < 1 or [v for i, v in enumerate(sizes) if i != inner] != ys:
        return None
    d = inner - 1
    if [int(v) for v in node.args[1]] != ys[:d] + [ys[d] * k] + ys[d + 1:]:
        return None
    return y


def _block_broadcast(node: Node) -> Ref | None:
    """The tensor a chain of :func:`_repeat_step` s repeats over blocks, or None."""
    base = _repeat_step(node)
    while base is not None and base.producer is not None:
        deeper = _repeat_step(base.producer)
        if deeper is None:
            break
        base = deeper
    return base


def _refs(value: Any) -> list[Ref]:
    if isinstance(value, Ref):
        return [value]
    if isinstance(value, (list, tuple)):
        return [r for v in value for r in _refs(v)]
    if isinstance(value, dict):
        return [r for v in value.values() for r in _refs(v)]
    return []


def _same_dtype(node: Node) -> bool:
    dtype = node.kwargs.get("dtype")
    return dtype is None or dtype == node.args[0].tensor.dtype


def _natural(paths: list[str]) -> list[str]:
    def key(p: str) -> list[Any]:
        return [(0, int(x), "") if x.isdigit() else (1, 0, x) for x in p.split(".")]

    return sorted(paths, key=key)


def _glob_of(paths: list[str]) -> str | None:
    parts = [p.split(".") for p in paths]
    if len({len(p) for p in parts}) != 1:
        return None
    differing = [i for i in range(len(parts[0])) if len({p[i] for p in parts}) > 1]
    if len(differing) != 1 or not all(p[differing[0]].isdigit() for p in parts):
        return None
    out = list(parts[0])
    out[differing[0]] = "*"
    return ".".join(out)


def python_path(path: str) -> str:
    """A module path as a formula name: ``layers.0.w`` -> ``layers[0].w``."""
    return re.sub(r"\.(\d+)(?=\.|\[|$)", r"[\1]", path)


def address_key(t: torch.Tensor) -> tuple[Any, ...]:
    """Where a tensor's elements are: equal for a parameter and its ``.data``."""
    try:
        ptr = t.untyped_storage().data_ptr()
    except (RuntimeError, NotImplementedError):
        ptr = id(t)
    return (ptr, t.storage_offset(), tuple(t.shape), tuple(t.stride()), t.dtype)
