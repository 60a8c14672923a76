"""Derived names a stamped layer does not hold yet: proven once per template column.

Adoption (:func:`derivgraph.adoption.adopt_or_allocate`) reads what each derived tensor's owner
already holds at its name: a tensor the engine made (adopted when it equals the formula), or
nothing (the tensor is allocated; an alias or a view takes its target). For the layers stamped
from one template (:attr:`DerivedGraph.stamps <derivgraph.compiler.graph.DerivedGraph>`) that
read is decided per column of the template: a derived position whose owner is the layer module
itself, of a kind that allocates or takes a target (parameter, buffer, attribute, alias, view;
never an engine tensor or a Python scalar), whose name no class of the module's MRO defines
(:func:`~derivgraph.paths.slot_of`'s class test); then every layer's module is swept for that
name in its registries and ``__dict__``. A name found in none of them is the
:data:`~derivgraph.paths.MISSING` the generic one-hop read gives, so adoption takes it as such
without reading it again; a layer that holds the name (an engine tensor to adopt, a plain
value) is read the generic way.
"""

from __future__ import annotations

from derivgraph.compiler.graph import DerivedGraph, DerivedNode
from derivgraph.compiler.stamp import by_template
from derivgraph.paths import _absent_on_class
from derivgraph.spec.kinds import TENSOR_KINDS, TensorKind, is_engine

__all__ = ["absent_names"]

#: the kinds whose entry, when the owner holds nothing at the name, depends on nothing else read
_TAKEN = TENSOR_KINDS | {TensorKind.ALIAS, TensorKind.VIEW}


def _column_kind(node: DerivedNode) -> bool:
    """Whether ``node``'s position can be decided per column: owned by its layer module under
    a plain one-hop name, of a kind in :data:`_TAKEN`, not made by the engine."""
    name = node.decl.name
    return node.kind in _TAKEN and not is_engine(node.decl) \
        and node.owner_path == node.bound.module_path and bool(name) and "." not in name \
        and not name.isdigit() and not (name.startswith("__") and name.endswith("__"))


def absent_names(graph: DerivedGraph) -> set[str]:
    """The derived nodes of stamped layers whose owner holds nothing at their name (what
    adoption would read as :data:`~derivgraph.paths.MISSING`), proven column by column."""
    derived = graph.derived
    out: set[str] = set()
    for template, layers in by_template(graph.stamps).items():
        for k, template_id in enumerate(template):
            first = derived.get(template_id)
            if first is None or not _column_kind(first):
                continue
            decl, name, cls = first.decl, first.decl.name, type(first.bound.module)
            if first.bound.module.__class__ is not cls or not _absent_on_class(cls, name):
                continue
            for ids in layers:
                node = derived.get(ids[k])
                if node is None or node.decl is not decl \
                        or node.owner_path != node.bound.module_path:
                    continue
                module = node.bound.module
                if type(module) is not cls or module.__class__ is not cls:
                    continue
                d = module.__dict__
                if name in d or name in d["_modules"] or name in d["_parameters"] \
                        or name in d["_buffers"]:
                    continue  # the layer holds something there: read it the generic way
                out.add(ids[k])
    return out
