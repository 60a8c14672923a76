"""Lazy workspaces that post-load code drops: refilled with a new tensor after every reload.

A post-load step resets ``self.x = None`` (or ``del self.x``) while a method of the same class
family builds ``self.x`` lazily under an ``is None`` guard::

    def process_weights_after_loading(self, layer):
        self.ws = None                                  # every reload drops the tensor
    def _get_ws(self, n):
        ws = self.ws
        if ws is None or ws.shape[0] < n:
            ws = torch.empty((n,), device=dev)
            self.ws = ws                                # the site
        return ws[:n]

A graph captured before the reload keeps reading the dropped storage, which the allocator hands
to other tensors. The site is the lazy store, not the reset: the store is the statement that
puts the tensor a graph captures on the object (as the other rules report stores), and its
value (an allocation, no weight) decides the severity through the existing semantics; the
reset is named in the reason. Only fresh tensors (``torch.empty``/``zeros``/``ones``/...)
count: a lazily built dict or object holds no storage a graph captures. Reset and store must sit
in one file (the family is the file's classes related by inheritance). Text tests run first
(an attribute reset to None, stored with something else, tested for None); only the methods
storing a candidate are parsed, never the whole file, so the rule adds little to a scan.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable

from derivgraph.audit.static.ast import short
from derivgraph.audit.static.scope import Reached
from derivgraph.audit.static.sites import CategoryId, RawSite
from derivgraph.audit.static.values import is_allocation, is_construction
from derivgraph.audit.static.walk import self_attribute, walk
from derivgraph.spec.kinds import TensorKind

__all__ = ["RULE_ROUND", "lazy_reset_sites", "lazy_store", "resets"]

RULE_ROUND = 28
"""The issue-21 round that added this rule (:attr:`.sites.RawSite.rule_round`)."""


def resets(reached: Iterable[Reached]) -> dict[tuple[str, str], tuple[str, int]]:
    """``(class, attr) -> (function, line)`` of each ``self.attr = None`` / ``del self.attr``
    in post-load code that reruns on a reload (not the initial-load-only or model-load hooks)."""
    out: dict[tuple[str, str], tuple[str, int]] = {}
    for item in reached:
        if item.cls is None or item.initial_load_only or item.model_load_only:
            continue
        for node in walk(item.func):
            targets: list[ast.expr] = []
            if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
                    and node.value.value is None):
                targets = node.targets
            elif isinstance(node, ast.Delete):
                targets = node.targets
            for target in targets:
                if (attr := self_attribute(target)) is not None:
                    out.setdefault((item.cls, attr), (item.qualname, node.lineno))
    return out


def _none_tested(test: ast.expr, attr: str, aliases: set[str]) -> bool:
    """Whether ``test`` is (or ors in) ``self.attr is None`` or ``alias is None``."""
    operands = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or) \
        else [test]
    for op in operands:
        if (isinstance(op, ast.Compare) and len(op.ops) == 1 and isinstance(op.ops[0], ast.Is)
                and isinstance(op.comparators[0], ast.Constant)
                and op.comparators[0].value is None):
            left = op.left
            if self_attribute(left) == attr or (isinstance(left, ast.Name)
                                                 and left.id in aliases):
                return True
    return False


def lazy_store(method: ast.AST, attr: str) -> tuple[ast.Assign, ast.expr] | None:
    """The store of a fresh tensor into ``self.attr`` under an ``is None`` guard of ``method``
    (directly or through a local), with the tensor's expression; None when there is none."""
    aliases = {n.targets[0].id for n in walk(method)
               if isinstance(n, ast.Assign) and len(n.targets) == 1
               and isinstance(n.targets[0], ast.Name) and self_attribute(n.value) == attr}
    for node in walk(method):
        if not (isinstance(node, ast.If) and _none_tested(node.test, attr, aliases)):
            continue
        body = [n for stmt in node.body for n in walk(stmt)]
        fresh = {n.targets[0].id: n.value for n in body
                 if isinstance(n, ast.Assign) and len(n.targets) == 1
                 and isinstance(n.targets[0], ast.Name) and is_construction(n.value)}
        for n in body:
            if isinstance(n, ast.Assign) and len(n.targets) == 1 \
                    and self_attribute(n.targets[0]) == attr:
                value = fresh.get(n.value.id) if isinstance(n.value, ast.Name) else (
                    n.value if is_construction(n.value) else None)
                if value is not None:
                    return n, value
    return None


_ASSIGN_RE = re.compile(r"self\.(\w+)[ \t]*=(?!=)[ \t]*(None\b)?")
_DELETE_RE = re.compile(r"del[ \t]+self\.(\w+)")
_TESTED_RE = re.compile(r"self\.(\w+)[ \t]+is[ \t]+None")


def _candidates(text: str) -> set[str]:
    """Text test, one pass per pattern: attributes reset to None (or deleted) and stored with
    something else, tested ``self.attr is None`` or through a local bound to ``self.attr``
    (post-load code is checked after, on the parsed functions)."""
    reset: set[str] = set()
    stored: set[str] = set()
    for m in _ASSIGN_RE.finditer(text):
        (reset if m.group(2) else stored).add(m.group(1))
    if "del self." in text:
        reset |= {m.group(1) for m in _DELETE_RE.finditer(text)}
    names = reset & stored
    if not names:
        return names
    tested = names & {m.group(1) for m in _TESTED_RE.finditer(text)}
    for attr in names - tested:
        for m in re.finditer(rf"=[ \t]*self\.{attr}[ \t]*$", text, re.M):
            local = text[text.rfind("\n", 0, m.start()) + 1:m.start()].strip()
            if local.isidentifier() and f"{local} is None" in text:
                tested.add(attr)
                break
    return tested


_DEF_RE = re.compile(r"^([ \t]*)(?:async[ \t]+)?def[ \t]+(\w+)", re.M)
_CLASS_RE = re.compile(r"^([ \t]*)class[ \t]+(\w+)", re.M)


def _methods_storing(text: str, attr: str) -> list[tuple[str, ast.AST]]:
    """(class, parsed method) of each method whose text stores ``self.attr``: only those
    methods are parsed (with their line numbers), not the file."""
    out: list[tuple[str, ast.AST]] = []
    seen: set[int] = set()
    defs = list(_DEF_RE.finditer(text))
    classes = list(_CLASS_RE.finditer(text))
    for m in re.finditer(rf"self\.{attr}\s*=(?!=)", text):
        before = [d for d in defs if d.start() < m.start()]
        if not before or before[-1].start() in seen:
            continue
        d = before[-1]
        indent = len(d.group(1))
        owner = [c for c in classes if c.start() < d.start() and len(c.group(1)) < indent]
        if not owner:
            continue
        seen.add(d.start())
        end = re.compile(rf"^[ \t]{{0,{indent}}}(?![)\]])\S", re.M).search(
            text, text.find("\n", d.start()) + 1)
        body = text[d.start():end.start() if end else len(text)]
        lines = [line[indent:] for line in body.splitlines()]
        try:
            tree = ast.parse("\n" * text.count("\n", 0, d.start()) + "\n".join(lines))
        except SyntaxError:
            continue  # a decorator or an odd indent: the method is not read
        out.append((owner[-1].group(2), tree.body[0]))
    return out


def lazy_reset_sites(text: str, filename: str, reached: Iterable[Reached],
                     lineage: Callable[[str], frozenset[str]]) -> list[RawSite]:
    """The lazy stores of fresh tensors into attributes post-load code of the same class family
    resets: one ``tensor-attr`` site each."""
    reached = [r for r in reached
               if r.cls is not None and not r.initial_load_only and not r.model_load_only]
    if not reached or "is None" not in text or ("= None" not in text
                                                and "del self." not in text):
        return []
    names = _candidates(text)
    if not names:
        return []
    dropped = {k: v for k, v in resets(reached).items() if k[1] in names}
    out: list[RawSite] = []
    for attr in {a for _, a in dropped}:
        for cls, method in _methods_storing(text, attr):
            family = lineage(cls)
            reset = next((v for (c, a), v in dropped.items() if a == attr
                          and (c in family or cls in lineage(c))), None)
            found = lazy_store(method, attr) if reset is not None else None
            if found is None or reset is None:
                continue
            (where, line), (stmt, value) = reset, found
            q = f"{cls}.{method.name}"  # type: ignore[attr-defined]
            source_line = text.splitlines()[stmt.lineno - 1]
            out.append(RawSite(  # the store starts its line: its column is the line's indent
                line=stmt.lineno, col=len(source_line) - len(source_line.lstrip()),
                cls=cls, function=q, attr=attr, owner="self", category=CategoryId.TENSOR_ATTR,
                reason=f"stores a new tensor lazily ({short(value)}) that {where} "
                       f"(line {line}) drops on every reload: the next call allocates "
                       "another while a captured graph reads the freed storage",
                expr=short(value, 120), kind=TensorKind.BUFFER, via=(where, q),
                classes=tuple(sorted(family)), lineage=tuple(sorted(family)),
                allocation=is_allocation(value), constructed=True, from_weights=False,
                rule_round=RULE_ROUND))
    return out
