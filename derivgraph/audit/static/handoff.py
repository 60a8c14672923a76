"""Handoffs: a new tensor a caller builds from a weight and hands to a constructor that keeps it.

``PreparedDenseMLP.__init__`` (post-load code) pads ``mlp.down_proj.weight`` into a local and
builds ``PreparedProjection(down, ...)``, defined in another file, whose ``__init__`` keeps its
argument (``self.weight = weight``). Neither half is a site alone: the caller stores an object,
the callee stores a parameter. The join is a store of a new tensor at the callee's line.

* the caller (:class:`HandoffRules`, a mixin of :class:`.rules.FunctionAudit`, so with the
  caller's flow-sensitive tensor inference) records a :class:`Handoff` where reached code calls
  a class (``C(...)``, ``mod.C(...)``, ``cls(...)`` in a classmethod) or a factory on one
  (``C.from_x(...)``) with an argument that is a new tensor derived from a weight (not a
  reference or a view of one, not an allocation), and keeps the object it builds (stored,
  returned, passed on, or bound to a local that is);
* :func:`handoff_roots` resolves the class through the tree index (any file) into an
  :class:`.module.ExternalRoot` of the constructor or factory carrying the :class:`Handed`
  parameters; the scan's next round audits that function with those parameters bound to new
  tensors (:meth:`HandoffRules._start_handoffs`), so its own store rules judge
  ``self.weight = weight`` (and what a factory hands on to ``cls(...)``);
* a dataclass without ``__init__`` keeps its arguments in its fields: :func:`dataclass_sites`
  reports the field lines. Dataclasses of tensors (containers) are left to the caller-side
  container rule, which already reports them;
* a value the audit already reports as rebuilt by a post-load step (a loud finding's
  ``self.x``, or the local it stores) that the same step hands to a constructor keeping it
  (``self.y = param``), directly or through builders and type arguments
  (:func:`.handed_reader.kept_stores`, also for a base class's ``__init__``):
  :func:`kept_handoffs` reports the constructor's store with its reader, at most as severe as
  the handed finding (rule round :data:`RULE_ROUND`).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from derivgraph.audit.static.ast import short
from derivgraph.audit.static.handed_reader import Kept, kept_stores
from derivgraph.audit.static.infer import TensorInference, TensorInfo, attr_chain, call_name
from derivgraph.audit.static.sites import CategoryId, Handed, RawSite
from derivgraph.audit.static.values import WEIGHT_WORDS, is_allocation, shape_free_chains
from derivgraph.audit.static.vocab import looks_like_tensor_attr
from derivgraph.audit.static.walk import own_nodes, walk
from derivgraph.spec.kinds import TensorKind

if TYPE_CHECKING:
    from derivgraph.audit.static.finding import StaticFinding
    from derivgraph.audit.static.index import ClassEntry, TreeIndex
    from derivgraph.audit.static.readers import ReaderIndex
    from derivgraph.audit.static.scope import ModuleScope, Reached

__all__ = ["RULE_ROUND", "Handoff", "HandoffRules", "dataclass_sites", "handoff_roots",
           "kept_handoffs"]

RULE_ROUND = 29
"""The issue-21 round of :func:`kept_handoffs` (``StaticFinding.rule_round``)."""


@dataclass(frozen=True)
class Handoff:
    """A call of reached code that hands new tensors to a class of the tree and keeps the
    object: ``target`` as resolved through the caller's imports (a short name for a class of the
    caller's file), ``method`` ``__init__`` or the factory's name."""

    target: str
    method: str
    handed: tuple[Handed, ...]


_SIMPLE = (ast.Assign, ast.AnnAssign, ast.Return, ast.Expr)


class HandoffRules:
    """Caller side: record handoffs; callee side: bind handed parameters to new tensors."""

    if TYPE_CHECKING:
        inf: TensorInference
        imports: dict[str, str]
        reached: Reached
        defs: dict[str, ast.expr]
        history: dict[str, list[ast.expr]]
        handoffs: list[Handoff]

        def _from_weights(self, value: ast.expr) -> bool: ...

    _escaping: frozenset[str] | None = None
    _handed_params: Mapping[str, Handed] = {}

    # ---- the caller ----------------------------------------------------------------------------

    def _handoffs(self, stmt: ast.stmt) -> None:
        if not isinstance(stmt, _SIMPLE) or stmt.value is None:
            return
        for call in _calls(stmt.value):
            target = self._handoff_target(call)
            if target is None:
                continue
            handed = [h for key, arg in _arguments(call)
                      if (h := self._handed_value(key, arg, call)) is not None]
            if handed and self._kept(stmt, call):
                self.handoffs.append(Handoff(*target, tuple(handed)))

    def _handoff_target(self, call: ast.Call) -> tuple[str, str] | None:
        """(class as resolved, method) for ``C(...)``, ``mod.C(...)``, ``cls(...)`` and
        ``C.factory(...)``/``cls.factory(...)``; None for any other call."""
        chain = attr_chain(call.func)
        if chain is None:
            return None
        *head, last = chain.split(".")
        own = self.reached.cls
        if chain == "cls" and own:
            return own, "__init__"
        if _class_like(last) and (not head or head[0] in self.imports
                                  or _class_like(head[0])):
            return call_name(call.func, self.imports) or chain, "__init__"
        if not head or last.startswith("_") or last[:1].isupper():
            return None
        if head == ["cls"] and own:
            return own, last
        if _class_like(head[-1]):
            return (call_name(call.func, self.imports) or chain).rpartition(".")[0], last
        return None

    def _handed_value(self, key: int | str, arg: ast.expr, call: ast.Call) -> Handed | None:
        """The argument as a :class:`Handed` when it is a new tensor derived from a weight."""
        info = self.inf.infer(arg)
        if (info is None or info.param or info.shares_storage or info.parameter
                or is_allocation(arg) or not self._from_weights(arg)):
            return None
        weight = self._weight_of(arg)
        if weight is None:
            return None
        origin = self._handed_params.get(arg.id) if isinstance(arg, ast.Name) else None
        return Handed(key, short(arg, 60), self.reached.qualname, call.lineno, weight,
                      origin=origin.why if origin else "")

    def _weight_of(self, value: ast.expr) -> str | None:
        """The first weight-named attribute chain the value reads as a tensor, following the
        locals it reads through every definition."""
        nodes, seen = [value], set()
        for node in nodes:
            for n in walk(node):
                if isinstance(n, ast.Name) and n.id not in seen and n.id in self.defs:
                    seen.add(n.id)
                    nodes += self.history.get(n.id, [self.defs[n.id]])
        for node in nodes:
            read = shape_free_chains(node)
            found = [(n.lineno, n.col_offset, -len(c), c) for n in walk(node)
                     if isinstance(n, ast.Attribute) and (c := attr_chain(n) or "") in read
                     and c.split(".")[0] not in self.imports and _weight_attr(n.attr)]
            if found:
                return min(found)[3]  # the first in source order
        return None

    def _kept(self, stmt: ast.stmt, call: ast.Call) -> bool:
        """Whether the statement keeps what the call builds: stores it on an object or in a
        container, returns it, passes it on, or binds a local that leaves the function."""
        if isinstance(stmt, ast.Return):
            return True
        if isinstance(stmt, ast.Expr):
            return any(call in walk(a) for c in _calls(stmt.value) if c is not call
                       for a in [*c.args, *(k.value for k in c.keywords)])
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]  # type: ignore
        names = [n for t in targets for n in walk(t)]
        if any(isinstance(n, (ast.Attribute, ast.Subscript)) for n in names):
            return True
        return bool({n.id for n in names if isinstance(n, ast.Name)} & self._escaping_locals())

    def _escaping_locals(self) -> frozenset[str]:
        """Locals read whole somewhere in the function (passed, stored, returned, put in a
        container), not only as the receiver of an attribute or method."""
        if self._escaping is None:
            func = self.reached.func
            receivers = {id(n.value) for n in walk(func) if isinstance(n, ast.Attribute)}
            self._escaping = frozenset(n.id for n in walk(func) if isinstance(n, ast.Name)
                                       and isinstance(n.ctx, ast.Load)
                                       and id(n) not in receivers)
        return self._escaping

    # ---- the callee ----------------------------------------------------------------------------

    def _start_handoffs(self, args: ast.arguments) -> None:
        """Start recording handoffs, and bind the parameters callers handed new tensors to
        (``Reached.handed``)."""
        self.handoffs = []
        handed = self.reached.handed
        if not handed:
            return
        positional = [a.arg for a in [*args.posonlyargs, *args.args]]
        if self.reached.cls and not _is_static(self.reached.func):
            positional = positional[1:]  # self or cls
        names = set(positional) | {a.arg for a in args.kwonlyargs}
        bound: dict[str, Handed] = {}
        for h in handed:
            name = (positional[h.key] if h.key < len(positional) else None) \
                if isinstance(h.key, int) else (h.key if h.key in names else None)
            if name is None or name in bound:
                continue
            bound[name] = h
            self.inf.locals[name] = TensorInfo(why=h.why)
            source = ast.parse(h.weight, mode="eval").body
            self.defs[name] = source
            self.history[name] = [source]
        self._handed_params = bound

    def handed_sites(self, sites: Sequence[RawSite]) -> list[RawSite]:
        """The sites, each one that stores a handed value (directly or through one local)
        carrying the weight the caller's value derives from."""
        if not self._handed_params:
            return list(sites)
        out = []
        for site in sites:
            words = set(re.findall(r"[A-Za-z_]\w*", site.expr))
            for local in list(words):
                if local in self.defs and local not in self._handed_params:
                    words |= set(re.findall(r"[A-Za-z_]\w*", ast.unparse(self.defs[local])))
            found = [h for n, h in self._handed_params.items() if n in words]
            out.append(replace(site, derives=found[0].weight) if found else site)
        return out


def _weight_attr(name: str) -> bool:
    return looks_like_tensor_attr(name) or any(w in name for w in WEIGHT_WORDS)


def _class_like(name: str) -> bool:
    """``PreparedProjection``, not ``CONSTANT`` or ``f``."""
    return name[:1].isupper() and not name.isupper()


def _is_static(func: ast.AST) -> bool:
    return any(isinstance(d, ast.Name) and d.id == "staticmethod"
               for d in getattr(func, "decorator_list", ()))


def _calls(node: ast.AST) -> Iterator[ast.Call]:
    """The calls in an expression, outside lambdas (depth first, the last child first)."""
    if isinstance(node, ast.Lambda):
        return
    for n in own_nodes(node, (ast.Lambda,), with_root=True):
        if isinstance(n, ast.Call):
            yield n


def _arguments(call: ast.Call) -> Iterator[tuple[int | str, ast.expr]]:
    for i, arg in enumerate(call.args):
        if isinstance(arg, ast.Starred):
            break
        yield i, arg
    for k in call.keywords:
        if k.arg is not None:
            yield k.arg, k.value


# ---- resolving handoffs across the tree ----------------------------------------------------------

def _entries(target: str, tree: TreeIndex, this_file: int) -> list[ClassEntry]:
    """The classes a resolved call target names: a class of the caller's file (a short name),
    of the module it was imported from, or (re-exported by a package) the one class of that
    name in the same top-level package."""
    module, _, name = target.rpartition(".")
    found = tree.entries(name)
    if not module:
        return [e for e in found if e.file == this_file]
    exact = [e for e in found if e.module == module]
    top = module.split(".")[0]
    same = [e for e in found if e.module.split(".")[0] == top]
    return exact or (same if len(same) == 1 else [])


def handoff_roots(handoffs: Sequence[Handoff], tree: TreeIndex,
                  ancestors: Mapping[str, frozenset[str]], containers: frozenset[str],
                  this_file: int, filename: str) -> Iterator[tuple[int, str, str,
                                                                  tuple[Handed, ...]]]:
    """(file, class, function, handed) of the constructors and factories the handoffs reach:
    the class's ``__init__`` (or the nearest ancestor's), its factory method, or a dataclass's
    generated ``__init__``. Dataclasses of tensors are left to the caller-side rule."""
    for h in handoffs:
        handed = tuple(replace(x, file=filename) for x in h.handed)
        for entry in _entries(h.target, tree, this_file):
            if entry.name in containers:
                continue
            owners = list(tree.resolve_method(entry.name, h.method, ancestors))
            if not owners and h.method == "__init__" and entry.dataclass:
                owners = [entry]
            for owner in owners:
                yield owner.file, owner.name, h.method, handed


def dataclass_sites(scope: ModuleScope, cls: str, via: tuple[str, ...],
                    handed: Sequence[Handed], root_classes: frozenset[str]) -> list[RawSite]:
    """Sites at the fields of a dataclass (generated ``__init__``) its callers hand new tensors
    to: the field keeps the caller's tensor."""
    info = scope.classes.get(cls)
    if info is None or "__init__" in info.methods:
        return []
    fields = [s for s in info.node.body if isinstance(s, ast.AnnAssign)
              and isinstance(s.target, ast.Name) and "ClassVar" not in ast.unparse(s.annotation)
              and not _no_init(s.value)]
    lineage = tuple(sorted(scope.lineage(cls)))
    q = f"{cls}.__init__"
    out = []
    for h in handed:
        field = (fields[h.key] if h.key < len(fields) else None) if isinstance(h.key, int) \
            else next((f for f in fields if f.target.id == h.key), None)  # type: ignore[union-attr]
        if field is None:
            continue
        attr = field.target.id  # type: ignore[union-attr]
        out.append(RawSite(
            line=field.lineno, col=field.col_offset, cls=cls, function=q, attr=attr,
            owner="self", category=CategoryId.TENSOR_ATTR,
            reason=f"stores a new tensor: {h.why}, kept in dataclass field {attr}",
            expr=attr, kind=TensorKind.ATTRIBUTE, via=(*via, q),
            classes=tuple(sorted(set(lineage) | root_classes)), lineage=lineage,
            derives=h.weight))
    return out


def _no_init(value: ast.expr | None) -> bool:
    """``field(init=False)``: not a constructor argument."""
    return isinstance(value, ast.Call) and any(
        k.arg == "init" and isinstance(k.value, ast.Constant) and k.value.value is False
        for k in value.keywords)


# ---- a rebuilt value kept by a constructor (after evidence) --------------------------------------

_LOUD = ("warning", "error")
_PLAIN = re.compile(r"^(?:int|str|bool|float|bytes)\b")


def kept_handoffs(findings: Sequence[StaticFinding], index: ReaderIndex,
                  body: Callable[[StaticFinding], str]) -> list[StaticFinding]:
    """The findings, plus one at each constructor store that keeps a value a loud finding's
    post-load step rebuilds and hands on (module docstring). ``body``: the text of a finding's
    storing function. The new finding names the kept attribute's reader after load and is at
    most as severe as the most severe finding handing the value; a store already reported, one
    nothing reads after load and a parameter annotated as a plain scalar or string are left
    out."""
    taken = {(f.file, f.line, f.attr) for f in findings}
    files = {display: i for i, (display, _) in enumerate(index.files)}
    new: dict[tuple[str, int, str], list[tuple[StaticFinding, Kept, str]]] = {}
    for f in findings:
        if f.severity.value not in _LOUD or f.owner != "self" or not f.cls or f.forwards:
            continue
        text = body(f)
        if not text:
            continue
        values = [f"self.{f.attr}"] + ([f.expr] if re.fullmatch(r"[a-z_]\w*", f.expr) else [])
        for value in values:
            for kept in kept_stores(index, text, files.get(f.file, -1), value):
                display = index.files[kept.file][0]
                key = (display, kept.line, kept.attr)
                if key in taken or _PLAIN.match(kept.annotation):
                    continue
                new.setdefault(key, []).append((f, kept, value))
    out = list(findings)
    for handed in new.values():
        kept = handed[0][1]
        family = index.family(kept.cls)
        # the handed value's read in the keeping class family, else the kept attribute's read
        if not any(f.reader and _reader_class(f.reader) in family for f, _, _ in handed):
            reader = index.reader(kept.cls, "self", kept.attr, index.files[kept.file][0])
            if reader is None:  # nothing reads the kept attribute after load
                continue
            handed = [(f, replace(k, reader=reader), v) for f, k, v in handed]
        out.append(_joined(handed, index))
    return out


def _joined(handed: list[tuple[StaticFinding, Kept, str]], index: ReaderIndex) -> StaticFinding:
    """The finding at one constructor store for every (finding, store, value) handing it a
    value: as severe as the most severe of them, from that one (the first), with its reader
    when a class of the keeping class's family reads it (the handed value's read through the
    kept attribute), else the kept attribute's own reader."""
    handing = [f for f, _, _ in handed]
    rank = max(_LOUD.index(h.severity.value) for h in handing)
    family = index.family(handed[0][1].cls)
    loud = [h for h in handing if _LOUD.index(h.severity.value) == rank]
    inside = [h for h in loud + handing
              if h.reader and _reader_class(h.reader) in family]
    first = inside[0] if inside and inside[0] in loud else loud[0]
    _, kept, value = handed[handing.index(first)]
    reader = inside[0].reader if inside else str(kept.reader)
    kind = inside[0].reader_kind if inside else kept.reader.kind  # type: ignore[union-attr]
    others = len({(h.file, h.line) for h in handing}) - 1
    module = index.files[kept.file][0].removesuffix(".py").removesuffix("/__init__")
    return replace(
        first, file=index.files[kept.file][0], line=kept.line, col=kept.col, attr=kept.attr,
        cls=kept.cls, function=f"{kept.cls}.__init__", owner="self", expr=kept.param,
        kind=TensorKind.ATTRIBUTE, via=(*first.via, f"{kept.cls}.__init__"), forwards=None,
        qualname=f"{module.replace('/', '.')}.{kept.cls}", reader=reader, reader_kind=kind,
        reason=f"keeps `{kept.param}`, handed `{value}` by {first.function} "
        f"({first.file}:{first.line}){f' and {others} more post-load steps' if others else ''}"
        ", which rebuild it after load: the object built with it keeps that build",
        evidence=f"read after load through the kept attribute; handed on through "
        f"{' -> '.join(kept.path)}; the handed value: "
        f"{first.evidence.split('; handed on through ')[0]}", rule_round=RULE_ROUND)


def _reader_class(reader: str) -> str:
    """The class of a reader in words (``kind file:line in Class.method: text``)."""
    m = re.match(r"\S+ \S+ in ([\w.]+):", reader)
    return m.group(1).split(".")[0] if m else ""
