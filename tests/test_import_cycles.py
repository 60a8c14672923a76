"""The package layers have no import cycle, counting every import the source spells.

Edges come from every ``import`` and ``from ... import`` in the tree: module level, inside
functions and under ``TYPE_CHECKING`` alike (a type-only import is still a dependency). An edge
``a -> b`` points at the module ``b`` names: ``from p import name`` points at ``p.name`` when that
is a module and at the package ``p`` otherwise. Any strongly connected component of more than one
module is a cycle, and the test names its members.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("derivgraph", "vllm_integration")


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    return ".".join(rel.parts).removesuffix(".__init__")


def _is_module(name: str) -> bool:
    path = ROOT.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _targets(node: ast.AST, module: str, is_package: bool) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    if node.level:
        parts = module.split(".") if is_package else module.split(".")[:-1]
        parts = parts[: len(parts) - node.level + 1]
        base = ".".join(parts + ([node.module] if node.module else []))
    else:
        base = node.module or ""
    out = []
    for alias in node.names:
        sub = f"{base}.{alias.name}"
        out.append(sub if _is_module(sub) else base)
    return out


def import_graph() -> nx.DiGraph:
    graph = nx.DiGraph()
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            module = _module_name(path)
            graph.add_node(module)
            tree = ast.parse(path.read_text(), filename=str(path))
            for node in ast.walk(tree):
                for target in _targets(node, module, path.name == "__init__.py"):
                    if target.split(".")[0] in PACKAGES and target != module:
                        graph.add_edge(module, target)
    return graph


def test_the_graph_sees_the_layers() -> None:
    graph = import_graph()
    assert graph.has_edge("derivgraph.compiler.lower", "derivgraph.ops")
    assert graph.number_of_nodes() > 100


def test_no_import_cycle() -> None:
    cycles = [sorted(c) for c in nx.strongly_connected_components(import_graph()) if len(c) > 1]
    assert cycles == [], f"import cycles: {cycles}"


def test_the_check_finds_a_planted_cycle() -> None:
    """Canary: a function-level import back from the leaf closes a cycle the test must see."""
    graph = import_graph()
    graph.add_edge("derivgraph.errors", "derivgraph.planner")  # as if errors imported planner
    cycles = [c for c in nx.strongly_connected_components(graph) if len(c) > 1]
    assert any("derivgraph.errors" in c for c in cycles)
