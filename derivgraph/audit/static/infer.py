"""Static tensor inference: does a Python expression (probably) produce a torch tensor?

The static audit never imports the code it reads, so it judges expressions by their shape:

* calls to ``torch`` functions that return tensors (``torch.full``, ``torch.cat``, ...), to
  ``torch.nn.functional.*`` and ``torch.ops.*``, and ``nn.Parameter(...)``; import aliases
  (``import torch as T``, ``from torch import cat``) are resolved;
* tensor methods: *strong* ones exist only on tensors (``.contiguous()``, ``.t()``,
  ``.reciprocal()``, ``.new_full()``, ...); *weak* ones (``.to()``, ``.clone()``, ``.max()``, ...)
  count only on a receiver already known to be a tensor;
* locals assigned a tensor earlier in the function, arguments annotated ``torch.Tensor``;
* attributes whose name looks like a tensor (``w13_weight``, ``weight_scale``, ``a2_gscale``,
  ``ab_strides1``, ``W_UV``, ...) or that this function already stored a tensor into;
* arithmetic, subscripts, conditional expressions and tuples over any of the above;
* calls to functions whose return annotation mentions ``Tensor`` (resolved through imports
  anywhere in the scanned tree) or whose ``return`` statements give tensors (same file).

Shapes, dtypes, devices, ``.item()``, ``.numel()`` and friends are *not* tensors.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace

from derivgraph.audit.static.vocab import (
    LAYOUT_HELPER_RE,
    LAYOUT_METHODS,
    LAYOUT_TORCH,
    NON_TENSOR_ATTRS,
    NON_TENSOR_METHODS,
    PARAMETER_NAMES,
    STRONG_METHODS,
    TORCH_TENSOR_FUNCS,
    TORCH_TENSOR_NAMESPACES,
    WEAK_METHODS,
    ReturnsTensor,
    looks_like_tensor_attr,
)
from derivgraph.audit.static.walk import walk

__all__ = ["TensorInference", "TensorInfo", "attr_chain", "call_name", "import_map"]


def attr_chain(node: ast.expr) -> str | None:
    """``self.a.b`` -> ``"self.a.b"``; None for anything that is not a dotted name."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Every statement, recursively through blocks, without walking expressions."""
    for stmt in body:
        yield stmt
        for part in ("body", "orelse", "finalbody"):
            block = getattr(stmt, part, None)
            if isinstance(block, list):
                yield from _statements(block)
        for handler in getattr(stmt, "handlers", None) or ():
            yield from _statements(handler.body)
        for case in getattr(stmt, "cases", None) or ():
            yield from _statements(case.body)


def import_map(tree: ast.Module, module_name: str, is_package: bool) -> dict[str, str]:
    """Local name -> qualified name for every import in a module (relative ones resolved).

    Imports inside functions count too (vLLM imports kernels lazily in post-load code); a name
    imported twice keeps its first binding.
    """
    out: dict[str, str] = {}
    package = module_name if is_package else module_name.rpartition(".")[0]
    for node in _statements(tree.body):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    out.setdefault(alias.asname, alias.name)
                else:
                    head = alias.name.split(".")[0]
                    out.setdefault(head, head)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".") if package else []
                keep = len(parts) - (node.level - 1)
                prefix = ".".join(parts[:max(keep, 0)])
                base = f"{prefix}.{base}" if base and prefix else (prefix or base)
            for alias in node.names:
                if alias.name != "*":
                    out.setdefault(alias.asname or alias.name,
                                   f"{base}.{alias.name}" if base else alias.name)
    return out


def call_name(func: ast.expr, imports: dict[str, str]) -> str | None:
    """The qualified dotted name a call target resolves to through imports, if any."""
    chain = attr_chain(func)
    if chain is None:
        return None
    head, _, rest = chain.partition(".")
    if head in imports:
        return f"{imports[head]}.{rest}" if rest else imports[head]
    return chain


@dataclass(frozen=True)
class TensorInfo:
    """Why an expression is judged a tensor, and what kind of value it is."""

    why: str
    fresh: bool = True  # a new tensor (or view); False for a reference to an existing one
    source: str | None = None  # for references: the dotted attribute it reads
    param: bool = False  # a reference to a tensor argument of the function
    layout: frozenset[str] = frozenset()  # layout-changing operations applied
    view: bool = False  # a slice/view of an existing tensor
    parameter: bool = False  # wraps a new nn.Parameter
    of_kept: bool = False  # a view (reshape, slice, permute...) of a tensor the code read

    @property
    def shares_storage(self) -> bool:
        """A reference, or a view of one: no new storage (the read tensor's storage)."""
        return not self.fresh or self.of_kept


@dataclass
class TensorInference:
    """Judges expressions in one function, given what is known about its locals."""

    imports: dict[str, str]
    returns_tensor: ReturnsTensor
    methods: frozenset[str] = frozenset()  # method names of the file's classes: not tensors
    locals: dict[str, TensorInfo] = field(default_factory=dict)
    stored: set[str] = field(default_factory=set)  # dotted attrs this function stored tensors in
    view_helpers: frozenset[str] = frozenset()  # same-file functions returning a view of arg 0

    def fork(self) -> TensorInference:
        """A copy for a nested scope (lambda, nested function)."""
        return TensorInference(self.imports, self.returns_tensor, self.methods,
                               dict(self.locals), set(self.stored), self.view_helpers)

    def qualified(self, func: ast.expr) -> str | None:
        return call_name(func, self.imports)

    def infer(self, node: ast.expr | None) -> TensorInfo | None:
        """A :class:`TensorInfo` when ``node`` probably evaluates to a tensor, else None."""
        if node is None:
            return None
        method = getattr(self, f"_infer_{type(node).__name__}", None)
        return method(node) if method else None

    # ---- leaves ---------------------------------------------------------------------------------

    def _infer_Name(self, node: ast.Name) -> TensorInfo | None:
        return self.locals.get(node.id)

    def _infer_Attribute(self, node: ast.Attribute) -> TensorInfo | None:
        if node.attr in NON_TENSOR_ATTRS:
            return None
        chain = attr_chain(node)
        if node.attr in ("T", "mT", "H", "mH"):
            inner = self.infer(node.value)
            if inner:
                return replace(inner, why=f".{node.attr} of a tensor", fresh=True, view=True,
                               layout=inner.layout | {node.attr}, source=None, param=False,
                               of_kept=inner.shares_storage)
            return None
        if node.attr == "data":
            inner = self.infer(node.value)
            return replace(inner, why=f"{chain or '<expr>'} (tensor data)") if inner else None
        if chain is None:
            return None
        if chain.split(".")[0] in self.imports:
            return None  # a module-level constant such as torch.float32 or envs.X
        if node.attr in self.methods and chain.count(".") == 1:
            return None  # a bound method (self._keep_router_weights)
        if chain in self.stored or looks_like_tensor_attr(node.attr):
            return TensorInfo(why=f"reference to {chain}", fresh=False, source=chain)
        return None

    # ---- compound expressions ------------------------------------------------------------------

    def _infer_Subscript(self, node: ast.Subscript) -> TensorInfo | None:
        inner = self.infer(node.value)
        if inner is None:
            return None
        return TensorInfo(why=f"indexing of a tensor ({_short(node)})", view=True,
                          layout=inner.layout | ({"slice"} if _reshapes(node.slice) else set()),
                          of_kept=inner.shares_storage)

    def _infer_BinOp(self, node: ast.BinOp) -> TensorInfo | None:
        left, right = self.infer(node.left), self.infer(node.right)
        if left or right:
            layout = frozenset().union(*(i.layout for i in (left, right) if i))
            return TensorInfo(why=f"arithmetic over tensors ({_short(node)})", layout=layout)
        return None

    def _infer_UnaryOp(self, node: ast.UnaryOp) -> TensorInfo | None:
        inner = self.infer(node.operand)
        if inner and not isinstance(node.op, ast.Not):
            return TensorInfo(why=f"arithmetic over tensors ({_short(node)})", layout=inner.layout)
        return None

    def _infer_IfExp(self, node: ast.IfExp) -> TensorInfo | None:
        return self.infer(node.body) or self.infer(node.orelse)

    def _infer_NamedExpr(self, node: ast.NamedExpr) -> TensorInfo | None:
        return self.infer(node.value)

    def _infer_Tuple(self, node: ast.Tuple | ast.List) -> TensorInfo | None:
        infos = [i for i in (self.infer(e) for e in node.elts) if i]
        if not infos:
            return None
        views = len(infos) == len(node.elts) and all(i.view and i.of_kept for i in infos)
        return TensorInfo(why=f"a container of tensors ({_short(node)})",
                          fresh=any(i.fresh for i in infos), param=all(i.param for i in infos),
                          source=infos[0].source if len(infos) == 1 else None,
                          view=views, of_kept=views)

    _infer_List = _infer_Tuple

    def _infer_ListComp(self, node: ast.ListComp) -> TensorInfo | None:
        scope = self.fork()
        for gen in node.generators:
            for name in _target_names(gen.target):
                it = scope.infer(gen.iter)
                if it:
                    scope.locals[name] = TensorInfo(why="element of a tensor container",
                                                    fresh=False)
        inner = scope.infer(node.elt)
        if inner:
            return TensorInfo(why=f"a list of tensors ({_short(node)})", fresh=inner.fresh)
        return None

    def _infer_Call(self, node: ast.Call) -> TensorInfo | None:
        func = node.func
        name = self.qualified(func)
        if name:
            info = self._torch_call(name, node)
            if info is not None:
                return info if info.why else None
        if isinstance(func, ast.Attribute):
            info = self._method_call(func, node)
            if info is not None:
                return info if info.why else None
        if isinstance(func, ast.Name) and func.id in self.view_helpers and node.args:
            first = self.infer(node.args[0])
            if first is None and isinstance(node.args[0], ast.Attribute):
                chain = attr_chain(node.args[0])
                first = TensorInfo(why=chain or "", fresh=False, source=chain) if chain else None
            if first is not None and first.shares_storage:
                return TensorInfo(why=f"{func.id}() returns {first.why} or a view of it",
                                  view=True, of_kept=True)
        returned = self.returns_tensor(node)
        if any(returned) if isinstance(returned, tuple) else returned:
            target = _short(func, 40)
            first = self.infer(node.args[0]) if node.args else None
            if _VIEW_HELPER.search(target.rsplit(".", 1)[-1]) and first is not None \
                    and first.shares_storage:
                return TensorInfo(why=f"{target}() returns a view of {first.why}", view=True,
                                  of_kept=True)
            return TensorInfo(why=f"{target}() returns a tensor", layout=_helper_layout(target))
        return None

    # ---- calls ---------------------------------------------------------------------------------

    def _torch_call(self, name: str, node: ast.Call) -> TensorInfo | None:
        """TensorInfo for torch calls; TensorInfo(why="") for a known non-tensor torch call."""
        if name in PARAMETER_NAMES:
            data = node.args[0] if node.args else next(
                (k.value for k in node.keywords if k.arg == "data"), None)
            inner = self.infer(data)
            if inner is None and isinstance(data, ast.Attribute) and data.attr == "data":
                # `Parameter(x.data)` of anything: wraps that storage
                chain = attr_chain(data.value) or _short(data.value)
                inner = TensorInfo(why=f"{chain}.data", fresh=False, source=chain)
            arg = _short(data) if data is not None else ""
            kind = name.rsplit(".", 1)[-1]
            if inner is not None and not inner.fresh:  # wraps existing storage: no new tensor
                return replace(inner, why=f"{kind}({arg}) over existing storage", parameter=True)
            return TensorInfo(why=f"{kind}({arg})", parameter=True,
                              layout=inner.layout if inner else frozenset())
        if not name.startswith("torch."):
            return None
        if name.startswith(TORCH_TENSOR_NAMESPACES):
            short = name.rsplit(".", 1)[-1] if not name.endswith(".default") else \
                name.rsplit(".", 2)[-2]
            if _PREDICATE.match(short):
                return TensorInfo(why="")
            layout = {short} if LAYOUT_HELPER_RE.search(short) else set()
            return TensorInfo(why=f"{name}(...)", layout=frozenset(layout))
        short = name[len("torch."):]
        if short in TORCH_TENSOR_FUNCS:
            args = [self.infer(a) for a in node.args]
            layout = {short} if short in LAYOUT_TORCH else set()
            for a in args:
                if a:
                    layout |= a.layout
            return TensorInfo(why=f"torch.{short}(...)", layout=frozenset(layout))
        return TensorInfo(why="")

    def _method_call(self, func: ast.Attribute, node: ast.Call) -> TensorInfo | None:
        meth = func.attr
        if meth in NON_TENSOR_METHODS:
            return TensorInfo(why="")
        receiver = self.infer(func.value)
        if meth == "detach" and not node.args:  # the same storage under a new tensor object
            if receiver is None:
                chain = attr_chain(func.value)
                return TensorInfo(why=f"{chain}.detach()", fresh=False, source=chain) \
                    if chain and "." in chain else TensorInfo(why="")
            return replace(receiver, why=f".detach() of {receiver.why}")
        if meth in STRONG_METHODS or (receiver is not None and meth in WEAK_METHODS):
            if meth == "to" and receiver is None:
                return None
            base = receiver.layout if receiver else frozenset()
            layout = base | ({meth} if meth in LAYOUT_METHODS else set())
            view = meth in {"view", "t", "transpose", "permute", "narrow", "expand", "squeeze",
                            "unsqueeze", "view_as", "as_strided", "movedim", "swapaxes"}
            keeps_storage = view or meth in _STORAGE_KEEPING
            return TensorInfo(why=f".{meth}() of a tensor ({_short(node)})", view=view,
                              layout=frozenset(layout),
                              of_kept=keeps_storage and receiver is not None
                              and receiver.shares_storage)
        return None


_STORAGE_KEEPING = frozenset({"reshape", "flatten", "unflatten", "view", "t", "transpose",
                              "permute", "narrow", "expand", "squeeze", "unsqueeze", "view_as",
                              "as_strided", "movedim", "swapaxes", "chunk", "split", "unbind"})
"""Methods whose result shares the receiver's storage (``reshape`` and ``flatten`` do whenever
the input is contiguous, as the layer's weights are)."""

_PREDICATE = re.compile(r"^(?:is|has|get|supports?|can|should)_")
_VIEW_HELPER = re.compile(r"(?:^|_)views?(?:_|$)")
"""A helper named as returning a view (``get_accelerator_view_from_cpu_tensor``): called on a
kept tensor, its result shares that tensor's storage."""


_VIEW_METHODS = frozenset({"view", "t", "transpose", "permute", "narrow", "expand", "squeeze",
                           "unsqueeze", "view_as", "as_strided", "movedim", "swapaxes", "detach"})


def view_helpers(functions: Mapping[str, ast.AST]) -> frozenset[str]:
    """Functions whose every ``return`` gives their first argument itself or a view of it
    (``return s if s.dtype == torch.uint8 else s.view(torch.uint8)``): called on a kept
    tensor, the result shares its storage."""
    out = set()
    for name, func in functions.items():
        args = getattr(func, "args", None)
        if args is None or not [*args.posonlyargs, *args.args]:
            continue
        first = [*args.posonlyargs, *args.args][0].arg
        returns = [n.value for n in walk(func) if isinstance(n, ast.Return)]
        if returns and all(_is_view_of(r, first) for r in returns):
            out.add(name)
    return frozenset(out)


def _is_view_of(node: ast.expr | None, name: str) -> bool:
    if isinstance(node, ast.Name):
        return node.id == name
    if isinstance(node, ast.IfExp):
        return _is_view_of(node.body, name) and _is_view_of(node.orelse, name)
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr in _VIEW_METHODS):
        return _is_view_of(node.func.value, name)
    return False


def _reshapes(index: ast.expr) -> bool:
    """Whether an index can change the shape: a bounded or stepped slice, or an integer."""
    parts = index.elts if isinstance(index, ast.Tuple) else [index]
    for part in parts:
        if isinstance(part, ast.Slice) and (part.lower or part.upper or part.step):
            return True
        if isinstance(part, ast.Constant) and isinstance(part.value, int):
            return True
        if isinstance(part, ast.UnaryOp) and isinstance(part.operand, ast.Constant):
            return True
    return False


def _helper_layout(name: str) -> frozenset[str]:
    short = name.rsplit(".", 1)[-1]
    return frozenset({short}) if LAYOUT_HELPER_RE.search(short) else frozenset()


def _target_names(target: ast.expr) -> list[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for e in target.elts for n in _target_names(e)]
    if isinstance(target, ast.Starred):
        return _target_names(target.value)
    return []


def _short(node: ast.AST, limit: int = 60) -> str:
    text = ast.unparse(node)
    return text if len(text) <= limit else text[: limit - 3] + "..."
