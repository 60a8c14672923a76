"""Every third-party import in the repository is declared in pyproject.toml.

A package installed by hand makes the suite pass on one machine and fail on a fresh one. This
reads every ``import`` (module level and inside functions) of the shipped and test code, drops
the standard library and the project's own packages, maps each module to the distribution that
provides it here, and requires that distribution in ``dependencies`` or an extra. An import
guarded by ``except ImportError`` is optional and exempt.
"""

from __future__ import annotations

import ast
import importlib.metadata as md
import re
import sys
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parents[1]
DIRS = ("derivgraph", "vllm_integration", "tests", "benchmarks", "examples", "scripts", "specs")
# the project's packages, plus scripts that tests and benchmarks import by path (sys.path)
OWN = {"derivgraph", "vllm_integration", "tests", "examples", "benchmarks", "specs"} | {
    p.stem for folder in ("benchmarks", "tests/fixtures", "examples")
    for p in (ROOT / folder).glob("*.py")}


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def declared_distributions() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = list(project["dependencies"])
    for extra in project.get("optional-dependencies", {}).values():
        reqs += extra
    return {_norm(re.split(r"[\s<>=!~;\[(]", r, maxsplit=1)[0]) for r in reqs}


def _optional_lines(tree: ast.AST) -> set[int]:
    """Lines of imports inside ``try:`` blocks that catch ImportError/ModuleNotFoundError."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Try):
            continue
        names = {ast.unparse(h.type) for h in node.handlers if h.type is not None}
        if any("ImportError" in n or "ModuleNotFoundError" in n for n in names):
            for stmt in node.body:
                lines.update(n.lineno for n in ast.walk(stmt) if hasattr(n, "lineno"))
    return lines


def third_party_imports(text: str) -> dict[str, int]:
    """Top-level module name -> first line, for non-stdlib, non-project, unguarded imports."""
    tree = ast.parse(text)
    optional = _optional_lines(tree)
    found: dict[str, int] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names = [node.module]
        else:
            continue
        if node.lineno in optional:
            continue
        for name in names:
            top = name.split(".")[0]
            if top in sys.stdlib_module_names or top in OWN or top == "__future__":
                continue
            found.setdefault(top, node.lineno)
    return found


def is_sibling(path: Path, module: str) -> bool:
    """A module of this repository next to the importing script (its folder is on sys.path when
    it runs) or in a folder above it inside the checked tree (``benchmarks/results/`` scripts
    put that folder on sys.path for the setup they share)."""
    top = next((ROOT / folder for folder in DIRS if (ROOT / folder) in path.parents), path.parent)
    for here in (path.parent, *path.parent.parents):
        if (here / f"{module}.py").is_file() or (here / module / "__init__.py").is_file():
            return True
        if here == top:
            return False
    return False


def undeclared() -> list[str]:
    providers = md.packages_distributions()
    wanted = declared_distributions()
    problems = []
    for folder in DIRS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            for module, line in third_party_imports(path.read_text()).items():
                if is_sibling(path, module):
                    continue
                dists = {_norm(d) for d in providers.get(module, [])}
                if not dists:
                    problems.append(f"{path.relative_to(ROOT)}:{line}: {module} is not installed "
                                    "here, so no distribution declares it")
                elif not dists & wanted:
                    problems.append(f"{path.relative_to(ROOT)}:{line}: {module} (from "
                                    f"{', '.join(sorted(dists))}) is not in pyproject.toml")
    return problems


def test_every_third_party_import_is_declared() -> None:
    assert undeclared() == []


def test_the_check_sees_an_undeclared_import() -> None:
    """Canary: a module importing a package no extra declares is caught; a guarded one is not."""
    found = third_party_imports("import numpy\nimport os\ntry:\n    import rich\n"
                                "except ImportError:\n    rich = None\n")
    assert found == {"numpy": 1}
    assert "hypothesis" in {m for m in third_party_imports("from hypothesis import given")}
    assert "hypothesis" in {_norm(d) for d in md.packages_distributions().get("hypothesis", [])}


def test_a_sibling_script_is_local_and_nothing_else_is() -> None:
    probe = ROOT / "benchmarks/results/review16a/probe_moe_refs.py"
    assert "toy" in third_party_imports(probe.read_text())
    assert is_sibling(probe, "toy")
    assert not is_sibling(probe, "toys") and not is_sibling(probe, "torch")


def test_a_module_above_the_script_is_local_and_a_cousin_is_not() -> None:
    """The results scripts' shared setup (``benchmarks/results/trees.py``) is local to a script
    below it; a module in another results folder (not on the script's path) is not, nor is one
    above the checked tree."""
    script = ROOT / "benchmarks/results/infer50/infer_ab.py"
    assert "trees" in third_party_imports(script.read_text())
    assert is_sibling(script, "trees") and is_sibling(script, "stamped_plan")
    assert (ROOT / "benchmarks/results/front46/build_ab.py").is_file()
    assert not is_sibling(script, "build_ab")  # front46's: a cousin folder
    assert (ROOT / "tests/conftest.py").is_file() and not is_sibling(script, "conftest")
