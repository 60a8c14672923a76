"""Containers of weight copies returned by a helper method: ``self._w = self._weights_942(l)``
where ``_weights_942`` builds ``Weights(w13=w13, ...)`` from tensors it copied, or from the
elements of a tuple a layer keeps (``w13, s13 = experts.mono942``: copies made at load, held
outside the parameter set), and returns that object. A helper that hands the container only
references to kept parameters (``Weights(w13=layer.w13_weight)``) returns no copies; a kept
tuple that its storing step refills in place (``old.copy_(new)``) holds references too."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from derivgraph.audit.static.ast import short
from derivgraph.audit.static.infer import attr_chain
from derivgraph.audit.static.values import COPY_METHODS, weight_named
from derivgraph.audit.static.vocab import NON_TENSOR_ATTRS
from derivgraph.audit.static.walk import own_nodes, walk

__all__ = ["ReturnedCopies", "refilled_in_place", "returned_copies"]

@dataclass(frozen=True)
class ReturnedCopies:
    """What a helper's returned container holds that is no reference to a kept parameter."""

    container: str  # the class it constructs (``MonoLayerWeights``)
    argument: str  # the first copied argument (``w13``)
    source: str  # where that copy comes from (``e.mono942``, ``layer.w.float()``)
    kept_tuple: bool = False  # the source is a tuple a module keeps (``e.mono942``)


def returned_copies(helper: ast.FunctionDef | ast.AsyncFunctionDef) -> ReturnedCopies | None:
    """The copies in the container ``helper`` returns, or None (no container, or references
    only). The container is a class constructed in a ``return`` or in the local returned."""
    bound: dict[str, ast.expr] = {}  # local -> its value (the last one in source order)
    unpacked: dict[str, str] = {}  # local -> the kept tuple it is an element of
    returns: list[ast.expr] = []
    for node in own_nodes(helper, breadth_first=True):  # breadth first, as before
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name):
                bound[target.id] = node.value
            elif isinstance(target, ast.Tuple) and (source := _kept_tuple(node.value)):
                unpacked.update({e.id: source for e in target.elts if isinstance(e, ast.Name)})
        elif isinstance(node, ast.Return) and node.value is not None:
            returns.append(node.value)
    for value in returns:
        call = bound.get(value.id) if isinstance(value, ast.Name) else value
        if not (isinstance(call, ast.Call) and (name := _class_name(call))):
            continue
        for arg in [*call.args, *(k.value for k in call.keywords)]:
            if isinstance(arg, ast.Name) and arg.id in unpacked:
                return ReturnedCopies(name, arg.id, unpacked[arg.id], kept_tuple=True)
            copied = bound.get(arg.id) if isinstance(arg, ast.Name) else arg
            if copied is not None and _copy_of_weight(copied):
                return ReturnedCopies(name, short(arg, 30), short(copied, 50))
    return None


def _kept_tuple(value: ast.expr) -> str | None:
    """``obj.attr`` unpacked into tensors: a tuple a module keeps as a plain attribute (a
    module registers its parameters one by one, never as a tuple); not ``w.shape``."""
    chain = attr_chain(value) if isinstance(value, ast.Attribute) else None
    if chain is None or "." not in chain or value.attr in NON_TENSOR_ATTRS:  # type: ignore[union-attr]
        return None
    return chain


def _class_name(call: ast.Call) -> str | None:
    f = call.func
    name = f.id if isinstance(f, ast.Name) else (f.attr if isinstance(f, ast.Attribute) else "")
    return name if name[:1].isupper() else None


def _copy_of_weight(value: ast.expr) -> bool:
    """``layer.w13_weight.float()`` / ``.to(torch.float32)`` / ``.clone()``: a copy of an
    attribute named like a weight."""
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
               and n.func.attr in COPY_METHODS and isinstance(n.func.value, ast.Attribute)
               and weight_named(n.func.value.attr) for n in walk(value))


def refilled_in_place(attr: str, text: str) -> str | None:
    """The name of a function of the file ``text`` that stores ``<obj>.<attr> = ...`` and
    refills with ``.copy_(...)`` (``_keep_copies``: the first copies are kept and a reload's
    copies are written into them), or None. Read from the text: the segmented parse may have
    left that function out."""
    for store in re.finditer(rf"\.{re.escape(attr)}[ \t]*=(?!=)", text):
        head = _enclosing_def(text, store.start())
        if head is not None and ".copy_(" in text[head[1]:head[2]]:
            return head[0]
    return None


def _enclosing_def(text: str, at: int) -> tuple[str, int, int] | None:
    """(name, start, end) of the innermost ``def`` around offset ``at``."""
    line_start = text.rfind("\n", 0, at) + 1
    indent = len(text[line_start:at]) - len(text[line_start:at].lstrip(" \t"))
    for m in reversed(list(_DEF.finditer(text, 0, line_start))):
        if len(m.group(1)) < indent:
            end = re.compile(rf"^[ \t]{{0,{len(m.group(1))}}}(?=\S)", re.M).search(text, m.end())
            stop = end.start() if end else len(text)
            return (m.group(2), m.start(), stop) if stop > at else None
    return None


_DEF = re.compile(r"^([ \t]*)(?:async[ \t]+)?def[ \t]+(\w+)", re.M)
