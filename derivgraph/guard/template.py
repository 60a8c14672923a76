"""Fast checks that what the engine rebuilt brings no tensor the snapshot did not have.

A rebuilt plain object's check is its snapshot object's :class:`Template`: when the engine
rebuilds a plain object on a guarded chain (a quant config, a descriptor, a kernel), the watch
must prove that the new object brings no tensor the snapshot did not have. A template, built once
per watched object, lets it do so in a few C calls: the same keys in the same order, and the same
exact class for every value that held no tensor at the snapshot (an atom's class decides that it
holds none). Edges (guarded slots, objects on a chain) are then followed one by one, and the
other values off every chain are checked one by one. An object whose keys or atom classes differ
is not matched: the watch falls back to its full descent.

A rebuilt value off every chain (an engine that assigns a fresh closure to a layer in every
post-load step, like vLLM's CPU GEMM dispatch) is checked by the :func:`value_template` of the
value that place held at the snapshot, when that value held no tensor:

* an atom (:data:`ATOM`): any value of an atom class holds none;
* a function or ``functools.partial`` (a :class:`CallSig`): the same code object and, for every
  value the census walk enters in it (closure cells, defaults, keyword defaults; a partial's
  function, arguments and keywords), the same exact class, each an atom class. A closure that
  captures a tensor (or any object the walk would enter) has no template, and a rebuilt one
  that does not match is walked whole, as before.
"""

from __future__ import annotations

import functools
import types
from typing import Any, NamedTuple

from derivgraph.audit.runtime.objects import Leaf, leaf_kind

__all__ = ["ATOM", "NO_TENSORS", "CallSig", "Template", "harmless", "template_of",
           "value_template"]

#: the walk's leaf kinds that hold no tensor
NO_TENSORS = (Leaf.ATOM, Leaf.INT, Leaf.FLOAT)

#: the value template of a place that held an atom
ATOM: Any = object()


class Template(NamedTuple):
    """The snapshot keys, the edges by value index (with the snapshot value: a guarded slot
    still holding it is unchanged), the indices whose snapshot values held no tensor with those
    values' exact classes, and the indices of the other values off every chain."""

    keys: tuple[Any, ...]
    edges: tuple[tuple[int, str, Any, Any], ...]  # (index, piece, snapshot value, bare slot)
    atoms: tuple[int, ...]
    atom_types: tuple[type, ...]
    others: tuple[tuple[int, str, Any], ...]  # (index, piece, key)


def template_of(pieces: tuple[str | None, ...], keys: tuple[Any, ...],
                values: tuple[Any, ...], edges: dict[str, Any]) -> Template:
    """The template of a plain object's ``__dict__`` (its path pieces, keys and values) given
    its node's edges (piece -> Edge: a bare slot is a guarded tensor with no object on a chain)."""
    on, atoms, others = [], [], []
    for j, (piece, key, value) in enumerate(zip(pieces, keys, values)):
        if piece is None:
            continue
        if piece in edges:
            edge = edges[piece]
            on.append((j, piece, value, edge.slot if edge.node is None else None))
        elif leaf_kind(value) in NO_TENSORS:  # decided by class: the same class, the same
            atoms.append(j)
        else:
            others.append((j, piece, key))
    return Template(keys, tuple(on), tuple(atoms), tuple(type(values[j]) for j in atoms),
                    tuple(others))


class _EmptyCell:
    """The class a signature records for an empty closure cell (the walk skips it)."""


class CallSig(NamedTuple):
    """A function's or partial's shape as the census walk sees it: its code object (a partial:
    its function's shape) and, for every value the walk enters in it in order (keyword names
    included), that value's exact class, or its own shape when it is a function or partial."""

    code: Any
    classes: tuple[Any, ...]


_CALLABLES = (types.FunctionType, functools.partial)
_DEPTH = 4  # functions nested deeper than this get no template (walked whole)
_BARE = ((),)  # the classes of a function with no cell, default or keyword default


def _cell(cell: types.CellType) -> Any:
    try:
        return cell.cell_contents
    except ValueError:  # an empty cell: the walk skips it
        return _EmptyCell


def _entered(value: Any) -> tuple[Any, list[Any], tuple[str, ...], list[Any]]:
    """(the code, or a partial's function; the values the walk enters by position; the keyword
    names; their values) of a function or an exact partial."""
    if type(value) is types.FunctionType:
        kw = value.__kwdefaults__ or {}
        return (value.__code__, [*map(_cell, value.__closure__ or ()), *(value.__defaults__ or ())],
                tuple(kw), list(kw.values()))
    kw = value.keywords or {}
    return value.func, list(value.args), tuple(kw), list(kw.values())


def _shape_of(value: Any, depth: int) -> Any:
    """A value's exact class, or a function's or partial's :class:`CallSig` (None: nested too
    deep); an empty cell is :class:`_EmptyCell` itself."""
    kind = type(value)
    if kind not in _CALLABLES:
        return _EmptyCell if value is _EmptyCell else kind
    if depth >= _DEPTH:
        return None
    code, args, names, kwargs = _entered(value)
    if kind is functools.partial:
        code = _shape_of(code, depth + 1)
    return CallSig(code, (*(_shape_of(v, depth + 1) for v in args), names,
                          *(_shape_of(v, depth + 1) for v in kwargs)))


def _tensor_free(value: Any, depth: int) -> bool:
    """Every value the walk enters in a function or partial is an atom or such a callable."""
    if depth >= _DEPTH:
        return False
    code, args, _names, kwargs = _entered(value)
    values = [code, *args, *kwargs] if type(value) is functools.partial else [*args, *kwargs]
    return all(v is _EmptyCell or leaf_kind(v) in NO_TENSORS
               or (type(v) in _CALLABLES and _tensor_free(v, depth + 1)) for v in values)


def value_template(value: Any) -> Any:
    """The template of a place off every chain holding ``value`` at the snapshot: :data:`ATOM`,
    a :class:`CallSig` when ``value`` is a function or exact partial holding no tensor (every
    value the walk enters in it is an atom or such a callable), else None (a rebuilt value
    there is walked whole)."""
    if leaf_kind(value) in NO_TENSORS:
        return ATOM
    if type(value) not in _CALLABLES or not _tensor_free(value, 0):
        return None
    return _shape_of(value, 0)


def harmless(template: Any, value: Any) -> bool:
    """Whether ``value`` at a place whose :func:`value_template` is ``template`` provably holds
    no tensor: an atom at an atom's place, or a function or partial of the same shape."""
    if template is ATOM:
        return leaf_kind(value) in NO_TENSORS
    kind = type(value)
    if kind is types.FunctionType and value.__closure__ is None \
            and value.__defaults__ is None and value.__kwdefaults__ is None:
        # the common case; the same code object (a closure rebuilt by the same function) is
        # decided by identity: ``==`` on code objects compares their fields (bytecode, constants,
        # names), cold memory right after a reload; an equal copy still passes by ``==``
        code = value.__code__
        return template.classes == _BARE and (code is template.code or code == template.code)
    return kind in _CALLABLES and _shape_of(value, 0) == template
