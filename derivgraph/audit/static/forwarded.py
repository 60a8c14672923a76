"""Forwarded rebuilds: a post-load store that keeps what another object's post-load step just
rebuilt.

A wrapping quant method runs the wrapped method's step and then takes its fresh result::

    self.old_quant_method.process_weights_after_loading(layer)   # rebuilds old.moe_quant_config
    ...
    self.moe_quant_config = self.old_quant_method.moe_quant_config

The wrapped step stores a new config (new tensors) on every run; the wrapper keeps that new
object on itself, where its own readers look it up. The store is a site when all of these hold:

* it is ``self.<a> = self.<inner>.<b>`` (onto the object the step belongs to, never a local);
* earlier in the same function, ``self.<inner>.<root>(...)`` calls a post-load root;
* the scan found a store of ``<b>`` on ``self`` in the post-load code of the class family of
  ``self.<inner>`` (its class from the constructor: ``self.<inner> = <param>: <Class>`` or
  ``self.<inner> = <Class>(...)``).

Candidates are marked by the audit of one function (:func:`forwarded_stores`); the scan keeps
those whose forwarded attribute is such a store (:func:`resolve_forwarded`) and, after the
evidence, gives each the severity of the stores it forwards (:func:`mirror_forwarded`).
"""

from __future__ import annotations

import ast
import dataclasses
import re
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

from derivgraph.audit.static.infer import attr_chain
from derivgraph.audit.static.scope import POST_LOAD_ROOTS
from derivgraph.audit.static.sites import RawSite
from derivgraph.audit.static.walk import own_nodes

if TYPE_CHECKING:
    from derivgraph.audit.static.finding import StaticFinding

__all__ = ["Forwarded", "forward_reason", "forwarded_stores", "holder_class", "mirror_forwarded",
           "rebuilt_stores", "resolve_forwarded"]

FORWARD_ROUND = 27
"""The issue-21 round that added the forwarded-rebuild rule
(:attr:`.finding.StaticFinding.rule_round`)."""
_SEMANTIC_FIELDS = ("category", "kind", "persistent", "empty", "view_of_kept", "weight_free",
                    "allocation", "constructed", "from_weights", "refilled")
"""The fields of a site that decide its rule (:func:`.semantics.semantics_of`)."""


@dataclasses.dataclass(frozen=True)
class Forwarded:
    """A resolved forwarding store: the class family and attribute it forwards."""

    inner: str  # the receiver of the rebuilding call, as written (``self.old_quant_method``)
    holder: str  # its class (short name)
    family: frozenset[str]
    attr: str  # the forwarded attribute


_REASON_END = "'s post-load step rebuilt just before"


def forward_reason(value: str, inner: str) -> str:
    """The reason of a forwarding site: what it keeps and whose step rebuilt it."""
    return f"keeps `{value}`, which `{inner}`{_REASON_END}"


def forwarded_stores(func: ast.AST, calls: Sequence[ast.Call] | None = None,
                     ) -> Iterator[tuple[ast.Assign, str, ast.expr, str]]:
    """``(statement, stored attribute, value, inner receiver)`` of each candidate store in
    ``func`` (its own body, not nested functions): ``self.<a> = self.<inner>.<b>`` after a
    ``self.<inner>.<post-load root>(...)`` call. ``calls`` (every call in ``func``,
    ``FunctionIndex.calls``), when given, leaves a function that calls no root at once (a
    text test of the file before it cost more than it saved)."""
    if calls is not None and not any(_root_receiver(c) for c in calls):
        return
    rebuilt: dict[str, int] = {}  # receiver chain -> line of its first post-load root call
    stores: list[tuple[ast.Assign, str, ast.expr, str]] = []
    for node in own_nodes(func):
        if isinstance(node, ast.Call):
            chain = _root_receiver(node)
            if chain:
                rebuilt[chain] = min(rebuilt.get(chain, node.lineno), node.lineno)
        elif (isinstance(node, ast.Assign) and len(node.targets) == 1
              and isinstance(node.targets[0], ast.Attribute)
              and attr_chain(node.targets[0].value) == "self"
              and isinstance(node.value, ast.Attribute)):
            inner = attr_chain(node.value.value)
            if inner and inner.startswith("self."):
                stores.append((node, node.targets[0].attr, node.value, inner))
    for stmt, attr, value, inner in stores:
        if inner in rebuilt and rebuilt[inner] < stmt.lineno:
            yield stmt, attr, value, inner


def _root_receiver(call: ast.Call) -> str | None:
    """``self.<inner>`` of a call ``self.<inner>.<post-load root>(...)``, else None."""
    if not (isinstance(call.func, ast.Attribute) and call.func.attr in POST_LOAD_ROOTS):
        return None
    chain = attr_chain(call.func.value)
    return chain if chain and chain.startswith("self.") else None


def holder_class(class_text: str, inner: str) -> str | None:
    """The class of ``self.<name>`` (``inner``) from its class's text: a constructor argument's
    annotation (``self.old = old`` with ``old: FusedMoEMethodBase``) or a construction
    (``self.old = Method(...)``)."""
    name = inner.split(".", 1)[1]
    if "." in name:
        return None
    bound = re.search(rf"^[ \t]*self\.{name}[ \t]*(?::[^=\n]*)?=[ \t]*([\w.]+)(\()?",
                      class_text, re.M)
    if bound is None:
        return None
    if bound.group(2):
        cls = bound.group(1).rsplit(".", 1)[-1]
        return cls if cls[:1].isupper() else None
    param = re.search(rf"\b{re.escape(bound.group(1))}[ \t]*:[ \t]*[\"']?([\w.]+)", class_text)
    return param.group(1).rsplit(".", 1)[-1] if param else None


def resolve_forwarded(sites: dict[tuple, tuple[int, RawSite]],
                      class_text: Callable[[int, str], str],
                      family: Callable[[str], frozenset[str]]) -> dict[tuple, Forwarded]:
    """Keep, in place, the candidate sites whose forwarded attribute the scan found stored in
    the inner object's class family, judged by the rule of the most common such store; drop
    the others. Returns the kept ones by ``(file index, line, attribute)``."""
    candidates = [k for k, (_, s) in sites.items() if s.forwards]
    if not candidates:
        return {}
    kept: dict[tuple, Forwarded] = {}
    for key in candidates:
        i, site = sites.pop(key)
        holder = holder_class(class_text(i, site.cls or ""), site.forwards or "")
        attr = site.expr.rpartition(".")[2]
        members = family(holder) if holder else frozenset()
        rebuilt = rebuilt_stores(sites, attr, members)
        if not rebuilt:
            continue
        category = Counter(s.category for s in rebuilt).most_common(1)[0][0]
        rep = next(s for s in rebuilt if s.category == category)
        resolved = dataclasses.replace(site, forwards=None, derives=f"{rep.cls}.{attr}",
                                       **{f: getattr(rep, f) for f in _SEMANTIC_FIELDS})
        sites[(key[0], key[1], key[2], key[3], category)] = (i, resolved)
        kept[(i, site.line, site.attr)] = Forwarded(site.forwards or "", holder or "", members,
                                                    attr)
    return kept


def rebuilt_stores(sites: Mapping[tuple, tuple[int, RawSite]], attr: str,
                   members: frozenset[str]) -> list[RawSite]:
    """The post-load stores of ``self.<attr>`` in the classes ``members`` (by file and line)."""
    return [s for _, s in sorted(sites.values(), key=lambda e: (e[0], e[1].line))
            if not s.forwards and s.attr == attr and s.owner == "self"
            and s.cls in members and not s.model_load_only]


def mirror_forwarded(findings: Sequence[StaticFinding], forwarded: Mapping[tuple, Forwarded],
                     file_index: Mapping[str, int]) -> list[StaticFinding]:
    """The findings with each forwarding store marked (``forwards``, the inner receiver) and
    given the severity most common among the stores it forwards (after their evidence), and
    evidence naming the one it mirrors; a forwarding store no reader reads keeps its own
    (``info``) verdict."""
    if not forwarded:
        return list(findings)
    out = []
    for f in findings:
        fwd = forwarded.get((file_index.get(f.file, -1), f.line, f.attr))
        if fwd is None:
            out.append(f)
            continue
        marked = dataclasses.replace(f, forwards=fwd.inner, rule_round=FORWARD_ROUND)
        rebuilt = sorted((g for g in findings if g.attr == fwd.attr and g.cls in fwd.family
                          and g.owner == "self" and g is not f), key=lambda g: (g.file, g.line))
        if not f.reader or not rebuilt:
            out.append(marked)
            continue
        severity = Counter(g.severity for g in rebuilt).most_common(1)[0][0]
        rep = next(g for g in rebuilt if g.severity is severity)
        out.append(dataclasses.replace(
            marked, severity=severity, derives_from=f"{rep.file}:{rep.line} ({rep.cls}.{fwd.attr})",
            evidence=f"forwards {fwd.inner}.{fwd.attr}, which {fwd.inner}'s post-load step "
            f"has just rebuilt ({len(rebuilt)} such store{'s' if len(rebuilt) > 1 else ''} in the "
            f"{fwd.holder} family; "
            f"like {rep.file}:{rep.line}: {rep.evidence})"))
    return out
