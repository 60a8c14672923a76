"""A rebuilt plain object's fast check: the snapshot object's keys and value classes.

When the engine rebuilds a plain object on a guarded chain (a quant config, a descriptor, a
kernel), the watch must prove that the new object brings no tensor the snapshot did not have.
A :class:`Template`, built once per watched object, lets it do so in a few C calls: the same
keys in the same order, and the same exact class for every value that held no tensor at the
snapshot (an atom's class decides that it holds none). Edges (guarded slots, objects on a
chain) are then followed one by one, and the other values off every chain are checked one by
one. An object whose keys or atom classes differ is not matched: the watch falls back to its
full descent.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from derivgraph.audit.runtime.objects import Leaf, leaf_kind

__all__ = ["NO_TENSORS", "Template", "template_of"]

#: the walk's leaf kinds that hold no tensor
NO_TENSORS = (Leaf.ATOM, Leaf.INT, Leaf.FLOAT)


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
