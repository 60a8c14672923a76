"""The package layers of README's "Layout" table, bottom up: each imports only the ones below
it, except the upward imports listed here, each with its reason.

``tests/test_import_cycles.py`` finds cycles only; an import from a lower layer into a higher
one that closes no cycle (``runtime`` reading ``adoption``, ``audit`` reading ``tools``) passed
it, while README said each layer imports only the ones below it. Edges are that test's: every
import the source spells, module level, in functions and under ``TYPE_CHECKING``.
"""

from __future__ import annotations

import networkx as nx

from tests.test_import_cycles import import_graph

LAYERS: list[tuple[str, ...]] = [  # README's Layout table, bottom up; one tuple a layer
    ("derivgraph.errors", "derivgraph.limits", "derivgraph.paths", "derivgraph.compare",
     "derivgraph._enum", "derivgraph.addresses", "derivgraph.dict_versions",
     "derivgraph.dict_slots", "derivgraph.column_layout"),
    ("derivgraph.spec",),
    ("derivgraph.ops",),
    ("derivgraph.compiler",),
    ("derivgraph.runtime",),
    ("derivgraph.planner", "derivgraph.adoption", "derivgraph.adoption_columns"),
    ("derivgraph.audit",),
    ("derivgraph.guard", "derivgraph.isolation"),
    ("derivgraph.trace",),
    ("derivgraph.tools", "derivgraph"),  # the package root alone (its re-exports): see _EXACT
    ("derivgraph.cli",),
    ("vllm_integration",),
]

_EXACT = {"derivgraph"}  # a prefix that names one module, not its subpackages

UPWARD = {  # (importer, imported): why this layer reaches above itself
    ("derivgraph.spec.expr", "derivgraph.ops"):
        "function-level: the op catalogue reads the live registry; validate stays torch-free",
    ("derivgraph.runtime.entry_columns", "derivgraph.adoption"):
        "alias columns are recorded with adoption's AliasOf (compile38b)",
    ("derivgraph.audit.runtime.capture", "derivgraph.tools.forward_capture"):
        "the capture audit records through the demo's forward recorder",
    ("derivgraph.cli.audit_vllm", "vllm_integration.executable_audit"):
        "function-level: `derivgraph audit vllm` runs the plugin's executable audit",
}


def layer_of(module: str) -> int:
    """The index of the layer holding ``module`` (the longest matching prefix wins)."""
    best, length = -1, -1
    for index, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            inside = prefix not in _EXACT and module.startswith(prefix + ".")
            if (module == prefix or inside) and len(prefix) > length:
                best, length = index, len(prefix)
    assert best >= 0, f"{module} is in no layer of README's Layout table"
    return best


def upward_edges(graph: nx.DiGraph) -> set[tuple[str, str]]:
    return {(a, b) for a, b in graph.edges() if layer_of(b) > layer_of(a)}


def test_each_layer_imports_only_the_ones_below_it_but_the_listed_ones() -> None:
    assert upward_edges(import_graph()) == set(UPWARD)


def test_a_planted_upward_import_is_found() -> None:
    """Canary: the leaf importing the compile driver."""
    graph = import_graph()
    graph.add_edge("derivgraph.errors", "derivgraph.planner")
    assert upward_edges(graph) - set(UPWARD) == {("derivgraph.errors", "derivgraph.planner")}
