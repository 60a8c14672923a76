"""Class-wide rules of the static audit: a store judged by what other methods of its class do.

* **Loader bypass**: a parameter a class registers (``self.w = Parameter(...)``,
  ``register_parameter("w", ...)``) that a load method of the same class fills by
  ``self.w.data.copy_(...)`` (or ``self.w.data[...].copy_(...)``) instead of through the
  parameter's ``weight_loader``. vLLM 0.33's layerwise ``reload_weights`` wraps only
  ``weight_loader``: the copy lands in the meta placeholder, the layer counts no loaded
  elements and ``finalize_layerwise_processing`` puts the old tensor back ("Failed to load
  weights"), so the weight keeps the previous checkpoint. Reported at the registration.
* **Lazy container on a rebuilt object**: an empty ``dict``/``list`` made in ``__init__`` of an
  object post-load code rebuilds (experts, kernels) and filled with new tensors by another
  method (``self._bufs[k] = torch.ones(...)``): every reload builds a new object, so the
  tensors allocated before graph capture are freed while a captured graph keeps their address.
  Reported at the container's store in ``__init__``.

Both read the whole file (the segmented scope may leave out a class that holds no post-load
code), and only when a cheap text test (:data:`GATE_RE`) finds a candidate.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator, Mapping

from derivgraph.audit.static.ast import short
from derivgraph.audit.static.infer import attr_chain
from derivgraph.audit.static.scope import base_short_name, is_rebuilt_lineage, regex_classes
from derivgraph.audit.static.segments import split_blocks
from derivgraph.audit.static.sites import CategoryId, RawSite
from derivgraph.audit.static.values import is_allocation, is_construction
from derivgraph.audit.static.walk import walk
from derivgraph.spec.kinds import TensorKind

__all__ = ["GATE_RE", "audit_class_wide", "bypass_copy", "lazy_container_fill"]

GATE_RE = re.compile(r"self\.\w+\.data(?:\[[^\n]*\])?\.copy_\(")
"""A file can hold a loader bypass only if it has a ``self.x.data.copy_``."""
EMPTY_RE = re.compile(r"self\.\w+(?:[ \t]*:[^=\n]+)?[ \t]*=[ \t]*"
                      r"(?:\{\}|\[\]|dict\(\)|list\(\))[ \t]*\n")
"""A file can hold a lazy container only if it stores an empty container on ``self`` (and
holds a rebuilt class)."""

_LOOSE_EMPTY = re.compile(r"\{\s*\}|\[\s*\]|\b(?:dict|list)\(\s*\)")
"""Any empty container in a block's text (looser than :data:`EMPTY_RE`: a block without one
holds no lazy container)."""
_EMPTY_CALLS = frozenset({"dict", "list"})
_FILL_METHODS = frozenset({"append", "setdefault", "insert"})
_STATE_DICT_HOOKS = frozenset({"_load_from_state_dict", "load_state_dict"})
"""torch's own state-dict loading: not on vLLM's weight-loading path."""


def audit_class_wide(text: str, filename: str,
                     lineage_of: Callable[[str, list[str]], frozenset[str]]) -> list[RawSite]:
    """The loader-bypass and lazy-container sites of one file (``lineage_of(cls, bases)``: the
    class and its ancestors)."""
    if not GATE_RE.search(text) and not (EMPTY_RE.search(text) and any(
            is_rebuilt_lineage(lineage_of(c, bases)) for c, bases in regex_classes(text))):
        return []
    out: list[RawSite] = []
    for cls in _classes(_parse_candidates(text, filename)):
        bases = [b for b in (base_short_name(x) for x in cls.bases) if b]
        lineage = lineage_of(cls.name, bases)
        methods = {m.name: m for m in cls.body
                   if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))}
        out.extend(_bypasses(cls.name, methods, lineage))
        if is_rebuilt_lineage(lineage):
            out.extend(_lazy_containers(cls.name, methods, lineage))
    return out


def _parse_candidates(text: str, filename: str) -> ast.Module:
    """The file's top-level blocks that can hold a bypass copy or an empty container (the rest
    cannot give a site), each parsed on its own at its true line; the whole file when a block
    does not parse alone (:mod:`.segments`)."""
    body: list[ast.stmt] = []
    try:
        for block in split_blocks(text):
            source = text[block.start:block.end]
            if GATE_RE.search(source) or _LOOSE_EMPTY.search(source):
                body += ast.parse("\n" * (block.line - 1) + source, filename).body
    except SyntaxError:
        return ast.parse(text, filename=filename)
    return ast.Module(body=body, type_ignores=[])


def _classes(tree: ast.AST) -> Iterator[ast.ClassDef]:
    for node in walk(tree):
        if isinstance(node, ast.ClassDef):
            yield node


def _site(cls: str, func: str, stmt: ast.stmt, attr: str, category: CategoryId, reason: str,
          value: ast.expr, kind: TensorKind, via: str, lineage: frozenset[str]) -> RawSite:
    return RawSite(line=stmt.lineno, col=stmt.col_offset, cls=cls, function=f"{cls}.{func}",
                   attr=attr, owner="self", category=category, reason=reason,
                   expr=short(value, 120), kind=kind, via=(via,), classes=tuple(sorted(lineage)),
                   lineage=tuple(sorted(lineage)))


def _self_stores(func: ast.AST) -> Iterator[tuple[ast.stmt, str, ast.expr]]:
    """``(statement, attr, value)`` of every ``self.attr = value`` (annotated or not)."""
    for node in walk(func):
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        for t in targets:
            if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) \
                    and t.value.id == "self":
                yield node, t.attr, value


def _call_tail(node: ast.expr) -> str | None:
    if not isinstance(node, ast.Call):
        return None
    f = node.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None


# ---- loader bypass ------------------------------------------------------------------------------

def _registrations(methods: Mapping[str, ast.AST]) -> dict[str, tuple[str, ast.stmt, ast.expr]]:
    """attr -> (method, statement, value) of each parameter the class registers on ``self``."""
    out: dict[str, tuple[str, ast.stmt, ast.expr]] = {}
    for name, func in methods.items():
        for stmt, attr, value in _self_stores(func):
            if (_call_tail(value) or "").endswith("Parameter"):
                out.setdefault(attr, (name, stmt, value))
        for node in walk(func):
            if isinstance(node, ast.Expr) and _call_tail(node.value) == "register_parameter" \
                    and attr_chain(node.value.func) == "self.register_parameter" \
                    and node.value.args and isinstance(node.value.args[0], ast.Constant) \
                    and isinstance(node.value.args[0].value, str):
                value = node.value.args[1] if len(node.value.args) > 1 else node.value
                out.setdefault(node.value.args[0].value, (name, node, value))
    return out


def bypass_copy(call: ast.Call) -> str | None:
    """``x`` when ``call`` is ``self.x.data.copy_(...)`` or ``self.x.data[...].copy_(...)``."""
    f = call.func
    if not (isinstance(f, ast.Attribute) and f.attr == "copy_"):
        return None
    target = f.value.value if isinstance(f.value, ast.Subscript) else f.value
    chain = attr_chain(target)
    parts = chain.split(".") if chain else []
    return parts[1] if len(parts) == 3 and parts[0] == "self" and parts[2] == "data" else None


def _loader_methods(methods: Mapping[str, ast.AST]) -> frozenset[str]:
    """Methods installed as a parameter's ``weight_loader`` (by name or attribute store): the
    layerwise reload wraps them, so a copy in them is counted."""
    out = {"weight_loader"}
    for func in methods.values():
        for node in walk(func):
            if isinstance(node, (ast.Assign, ast.keyword, ast.Dict)):
                out.update(_installed_loaders(node, methods))
    return frozenset(out)


def _installed_loaders(node: ast.AST, methods: Mapping[str, ast.AST]) -> set[str]:
    """``p.weight_loader = self.m``, ``weight_loader=self.m``, ``{"weight_loader": self.m}``
    (also through ``partial(self.m, ...)``)."""
    pairs: list[tuple[str | None, ast.expr]] = []
    if isinstance(node, ast.Assign):
        pairs = [(t.attr if isinstance(t, ast.Attribute) else None, node.value)
                 for t in node.targets]
    elif isinstance(node, ast.keyword):
        pairs = [(node.arg, node.value)]
    elif isinstance(node, ast.Dict):
        pairs = [(k.value if isinstance(k, ast.Constant) and isinstance(k.value, str) else None,
                  v) for k, v in zip(node.keys, node.values, strict=True) if k is not None]
    out = set()
    for key, value in pairs:
        if isinstance(value, ast.Call) and (_call_tail(value) or "").endswith("partial") \
                and value.args:
            value = value.args[0]  # functools.partial(self.m, shard_id=...)
        chain = attr_chain(value) or ""
        if key == "weight_loader" and chain.startswith("self.") and chain[5:] in methods:
            out.add(chain[5:])
    return out


def _bypasses(cls: str, methods: Mapping[str, ast.AST],
              lineage: frozenset[str]) -> Iterator[RawSite]:
    # the copies first (few classes have one), then what registers and installs loaders
    copies = [(name, node, attr) for name, func in methods.items()
              if "load" in name and name not in _STATE_DICT_HOOKS
              for node in walk(func)
              if isinstance(node, ast.Call) and (attr := bypass_copy(node)) is not None]
    if not copies:
        return
    registered = _registrations(methods)
    if not registered:
        return
    loaders = _loader_methods(methods)
    seen: set[str] = set()
    for name, node, attr in copies:
        if name in loaders or attr not in registered or attr in seen:
            continue
        seen.add(attr)
        where, stmt, value = registered[attr]
        reason = (f"registered parameter filled by `{short(node, 70)}` (line {node.lineno}, "
                  f"in {name}) around its weight_loader: a layerwise reload copies into the "
                  "meta placeholder, counts nothing loaded and restores the old tensor")
        yield _site(cls, where, stmt, attr, CategoryId.LOADER_BYPASS, reason, value,
                    TensorKind.PARAMETER, f"{cls}.{name}", lineage)


# ---- lazy containers on rebuilt objects ---------------------------------------------------------

def _is_empty_container(value: ast.expr) -> bool:
    if isinstance(value, (ast.Dict, ast.List)):
        return not (value.keys if isinstance(value, ast.Dict) else value.elts)
    return isinstance(value, ast.Call) and isinstance(value.func, ast.Name) \
        and value.func.id in _EMPTY_CALLS and not value.args and not value.keywords


def _makes_tensor(value: ast.expr, func: ast.AST) -> bool:
    """Whether ``value`` is a new tensor: a ``torch.*`` call or allocation, directly or through a
    local the function binds to one."""
    def tensor_call(v: ast.expr) -> bool:
        return isinstance(v, ast.Call) and (
            is_allocation(v) or is_construction(v)
            or (attr_chain(v.func) or "").startswith("torch."))
    if tensor_call(value):
        return True
    if not isinstance(value, ast.Name):
        return False
    return any(isinstance(n, ast.Assign) and tensor_call(n.value)
               and any(isinstance(t, ast.Name) and t.id == value.id for t in n.targets)
               for n in walk(func))


def lazy_container_fill(func: ast.AST, attr: str) -> ast.AST | None:
    """The first statement of ``func`` that puts a new tensor into ``self.<attr>``
    (``self.<attr>[k] = t``, ``self.<attr>.append(t)``, ``.setdefault(k, t)``)."""
    for node in walk(func):
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Subscript) and attr_chain(t.value) == f"self.{attr}" \
                        and _makes_tensor(node.value, func):
                    return node
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in _FILL_METHODS \
                and attr_chain(node.func.value) == f"self.{attr}" and node.args \
                and _makes_tensor(node.args[-1], func):
            return node
    return None


def _lazy_containers(cls: str, methods: Mapping[str, ast.AST],
                     lineage: frozenset[str]) -> Iterator[RawSite]:
    init = methods.get("__init__")
    if init is None:
        return
    for stmt, attr, value in _self_stores(init):
        if not _is_empty_container(value):
            continue
        for name, func in methods.items():
            fill = None if name == "__init__" else lazy_container_fill(func, attr)
            if fill is None:
                continue
            reason = (f"a container made empty here and filled with new tensors by {name}() "
                      f"(line {fill.lineno}) on an object post-load code rebuilds: a reload "
                      "frees the tensors allocated before capture")
            yield _site(cls, "__init__", stmt, attr, CategoryId.CONTAINER, reason, value,
                        TensorKind.ATTRIBUTE, f"{cls}.{name}", lineage)
            break
