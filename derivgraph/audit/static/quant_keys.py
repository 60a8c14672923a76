"""The key a storing class asks its selector for, and the backends that run with it.

A selector may filter its backends by a key the storing class hands it: vLLM's online MXFP4
method asks ``select_mxfp4_moe_backend(config=self.moe,
activation_key=self.activation_quant_key)`` with the class attribute ``activation_quant_key =
kMxfp4Dynamic`` (:func:`requested_keys`), and the selector's module maps each backend to the key
it runs with (``_backend_activation_key``: ``if backend in (AITER_MXFP4_MXFP4,
CUTLASS_MXFP4_MXFP4, ...): return kMxfp4Dynamic`` ... ``return None``, :func:`backend_keys`).
``_filter_by_activation`` tries the backends running with the asked key first, drops those of
another key, and keeps the unquantized-activation ones (``None``) only as a fallback after them.

The rule (:func:`keyed_out`): when some backend of a selector module runs with a key the storing
class asks for, the classes that module maps only to other backends are not candidates: the
path the selector tries first is served by the asked key's backends (the fallback serves only
a device none of them supports). A class the module maps to no backend stays. Read with
:mod:`ast`; vLLM is never imported.
"""

from __future__ import annotations

import ast

from derivgraph.audit.static.backend_branches import Binding, class_backends
from derivgraph.audit.static.source_tree import ReaderIndex, class_node, parsed
from derivgraph.audit.static.walk import self_attribute, walk

__all__ = ["backend_keys", "keyed_out", "requested_keys"]


def requested_keys(index: ReaderIndex, home: str, cls: str,
                   found: tuple[Binding, ...]) -> dict[str, str]:
    """Keyword -> the constant it names in every call by class ``cls`` of ``home`` of a
    selector it binds an attribute from (``found``: its
    :func:`.backend_branches.bound_selectors`; ``activation_key=self.activation_quant_key``
    with ``activation_quant_key = kMxfp4Dynamic`` in the class body: ``{"activation_key":
    "kMxfp4Dynamic"}``); a keyword whose value is anything else, or that one call leaves out or
    names another constant in (the key then depends on the config: Quark's OCP MX method asks
    ``kFp8StaticTensorSym``, ``kMxfp4Dynamic`` or nothing by scheme), is left out."""
    def find() -> dict[str, str]:
        node = class_node(index, home, cls)
        selectors = {b.selector for b in found}
        if node is None or not selectors:
            return {}
        attrs = _class_constants(node)
        asked: list[set[tuple[str, str]]] = []
        for call in (n for n in walk(node) if isinstance(n, ast.Call)
                     and isinstance(n.func, ast.Name) and n.func.id in selectors):
            pairs = set()
            for k in call.keywords:
                value = k.value
                if (attr := self_attribute(value)) is not None:
                    name = attrs.get(attr)
                else:
                    name = value.id if isinstance(value, ast.Name) else None
                if k.arg and name:
                    pairs.add((k.arg, name))
            asked.append(pairs)
        return dict(set.intersection(*asked)) if asked else {}

    return index.memo(f"requested keys {hash(home)} {cls}", find)


def _class_constants(node: ast.ClassDef) -> dict[str, str]:
    """Class attribute -> the constant name it is bound to in the class body (``x = kName``,
    ``x: T = kName``), for attributes the class's methods never rebind through ``self``."""
    out: dict[str, str] = {}
    for stmt in node.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target, value = stmt.targets[0], stmt.value
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            target, value = stmt.target, stmt.value
        else:
            continue
        if isinstance(target, ast.Name) and isinstance(value, ast.Name):
            out[target.id] = value.id
    rebound = {a for n in walk(node) if isinstance(n, (ast.Assign, ast.AnnAssign))
               for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
               if (a := self_attribute(t)) is not None}
    return {k: v for k, v in out.items() if k not in rebound}


def backend_keys(index: ReaderIndex, module: str) -> dict[str, str]:
    """Backend member -> the key it runs with, read from the selector ``module``'s function of
    a ``backend`` parameter that returns a named constant under each backend test (``if backend
    == Enum.DEEPGEMM: return kFp8Dynamic128Sym``; ``if backend in (Enum.A, Enum.B): return
    kMxfp8Dynamic``) and ``None`` last (every other backend: "None"); empty when it has none."""
    def find() -> dict[str, str]:
        tree = parsed(index, module)
        for fn in (n for n in tree.body if isinstance(n, ast.FunctionDef)) if tree else ():
            if "backend" not in {a.arg for a in fn.args.args} or not fn.body:
                continue
            out: dict[str, str] = {}
            for stmt in fn.body[:-1]:
                found = _keyed_branch(stmt)
                if found is None:
                    out = {}
                    break
                out.update(dict.fromkeys(found[0], found[1]))
            last = fn.body[-1]
            if out and isinstance(last, ast.Return) and _constant(last.value) == "None":
                return out
        return {}

    return index.memo(f"backend keys {hash(module)}", find)


def _keyed_branch(stmt: ast.stmt) -> tuple[list[str], str] | None:
    """``(members, key)`` of ``if backend == E.M: return kKey`` (or ``backend in (E.A,
    E.B)``, no ``else``); a docstring: ``([], "")``; else None."""
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
        return [], ""
    if not (isinstance(stmt, ast.If) and not stmt.orelse and len(stmt.body) == 1
            and isinstance(stmt.body[0], ast.Return)):
        return None
    key = _constant(stmt.body[0].value)
    test = stmt.test
    if not (key and isinstance(test, ast.Compare) and len(test.ops) == 1
            and isinstance(test.left, ast.Name) and test.left.id == "backend"):
        return None
    right = test.comparators[0]
    if isinstance(test.ops[0], (ast.Eq, ast.Is)) and isinstance(right, ast.Attribute):
        return [right.attr], key
    if isinstance(test.ops[0], ast.In) and isinstance(right, (ast.Tuple, ast.List, ast.Set)) \
            and all(isinstance(e, ast.Attribute) for e in right.elts):
        return [e.attr for e in right.elts if isinstance(e, ast.Attribute)], key
    return None


def _constant(node: ast.expr | None) -> str:
    """A named constant's name, "None" for ``None``, else ""."""
    if isinstance(node, ast.Name):
        return node.id
    return "None" if isinstance(node, ast.Constant) and node.value is None else ""


def keyed_out(index: ReaderIndex, home: str, cls: str | None, found: tuple[Binding, ...],
              candidates: frozenset[str]) -> frozenset[str]:
    """The ``candidates`` that each selector module class ``cls`` of ``home`` binds from
    (``found``: its :func:`.backend_branches.bound_selectors`) maps only to backends running
    with another key than one ``cls`` asks it for, when some backend runs with that key (module
    docstring); empty otherwise."""
    if not cls:
        return frozenset()
    asked = set(requested_keys(index, home, cls, found).values())
    out: set[str] = set()
    for module in (b.module for b in found):
        keys = backend_keys(index, module)
        for key in asked & set(keys.values()):
            taking = {m for m, k in keys.items() if k == key}
            out.update(c for c in candidates if (owned := class_backends(index, module, c))
                       and not owned & taking)
    return frozenset(out)
