"""Drift detection: does the installed vLLM still look the way the hook table says?

Everything here reads vLLM's *source* with :mod:`ast` (and its version from the package
metadata); nothing imports vLLM, so the plugin can check at startup for the price of parsing
the dozen files the table names.

* :func:`check_rows` — every row's module exists, defines (or imports by name) its attribute,
  and the definition still has the verified parameter names;
* :func:`missing_bindings` — every module that imports a target function by name (directly or
  through a re-export) and is not in the table: a binding the hooks would leave unwrapped;
* :func:`preflight` — both, plus the version check: logs ONE warning naming every target that
  cannot be wrapped, and in ``strict`` mode raises :class:`VllmDriftError` (DG060) unless
  ``DERIVGRAPH_ALLOW_UNVERIFIED_VLLM=1``.
"""

from __future__ import annotations

import ast
import importlib.util
import logging
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from derivgraph.errors import DerivgraphError, Rule
from vllm_integration import hook_table
from vllm_integration.hook_table import TABLE, VERIFIED_VLLM_VERSIONS, HookKind, HookRow

__all__ = [
    "ALLOW_ENV", "ByNameImport", "DriftIssue", "DriftReport", "VllmDriftError", "check_rows",
    "check_source", "installed_version", "missing_bindings", "preflight", "scan_by_name_imports",
    "source_root",
]

logger = logging.getLogger(__name__)

ALLOW_ENV = "DERIVGRAPH_ALLOW_UNVERIFIED_VLLM"


class VllmDriftError(DerivgraphError):
    """Strict mode refused to start: the installed vLLM differs from the verified hook table."""

    rule = Rule.VLLM_DRIFT


@dataclass(frozen=True)
class DriftIssue:
    """A target that cannot be wrapped (or a binding the table misses), and why."""

    target: str
    problem: str
    key: str = ""  # the HookRow.key of the definition it disables ("" for a missing binding)

    def __str__(self) -> str:
        return f"{self.target} ({self.problem})"


@dataclass(frozen=True)
class ByNameImport:
    """``from source import name`` in ``module`` at ``line`` (``top_level``: not in a def)."""

    module: str
    name: str
    source: str
    line: int
    top_level: bool


@dataclass
class DriftReport:
    """The version check and the source checks of one vLLM installation."""

    version: str | None
    issues: list[DriftIssue] = field(default_factory=list)

    @property
    def verified(self) -> bool:
        return self.version in VERIFIED_VLLM_VERSIONS

    @property
    def clean(self) -> bool:
        return self.verified and not self.issues

    def disabled_keys(self) -> frozenset[str]:
        """Definitions the hooks must leave alone (their targets drifted)."""
        return frozenset(i.key for i in self.issues if i.key)

    def message(self) -> str:
        head = (f"vLLM {self.version or '(not installed)'} is "
                + ("a verified version" if self.verified else
                   f"not a version derivgraph's hook table was verified for "
                   f"({', '.join(VERIFIED_VLLM_VERSIONS)})"))
        if not self.issues:
            return head + "; every hook target was found as verified"
        return (f"{head}; {len(self.issues)} hook target(s) cannot be wrapped, so reloads "
                f"through them are not kept in place: " + "; ".join(map(str, self.issues)))


# ---- locating and parsing vLLM's source -------------------------------------------------------

def source_root(package: str = "vllm") -> Path | None:
    """The folder of an installed top-level package, found without importing it."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def installed_version(package: str = "vllm") -> str | None:
    """The installed distribution's version (see :func:`hook_table.installed_version`)."""
    return hook_table.installed_version(package)


def _module_file(root: Path, module: str) -> Path | None:
    parts = module.split(".")[1:]
    base = root.joinpath(*parts)
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _module_name(root: Path, package: str, path: Path) -> str:
    rel = path.relative_to(root).with_suffix("")
    parts = [package, *rel.parts]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _parse(path: Path) -> ast.Module | None:
    try:
        return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError) as exc:
        logger.debug("derivgraph: cannot parse %s: %s", path, exc)
        return None


def _top_level(tree: ast.Module) -> list[ast.stmt]:
    """Statements run at import: the body and ``if`` / ``try`` blocks inside it."""
    out: list[ast.stmt] = []
    todo = list(tree.body)
    while todo:
        node = todo.pop(0)
        out.append(node)
        if isinstance(node, ast.If):
            todo += node.body + node.orelse
        elif isinstance(node, ast.Try):
            todo += node.body + node.orelse + node.finalbody
            for handler in node.handlers:
                todo += handler.body
    return out


def _param_names(args: ast.arguments) -> tuple[str, ...]:
    names = [a.arg for a in (*args.posonlyargs, *args.args)]
    if args.vararg:
        names.append(args.vararg.arg)
    names += [a.arg for a in args.kwonlyargs]
    if args.kwarg:
        names.append(args.kwarg.arg)
    return tuple(names)


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def _imports(tree: ast.Module, module: str, is_package: bool,
             names: frozenset[str]) -> list[ByNameImport]:
    top = {id(n) for n in _top_level(tree)}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if alias.name in names:
                    out.append(ByNameImport(module, alias.name,
                                            _resolve(module, is_package, node), node.lineno,
                                            id(node) in top))
    return out


# ---- checks ----------------------------------------------------------------------------------

def _find_def(tree: ast.Module, attribute: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    scope: list[ast.stmt] = _top_level(tree)
    *owners, name = attribute.split(".")
    for owner in owners:
        cls = next((n for n in scope if isinstance(n, ast.ClassDef) and n.name == owner), None)
        if cls is None:
            return None
        scope = list(cls.body)
    for node in scope:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            return node
    return None


def check_rows(table: Iterable[HookRow] = TABLE, root: Path | None = None,
               package: str = "vllm") -> list[DriftIssue]:
    """Rows whose module, definition, by-name import or signature is not as verified."""
    root = root or source_root(package)
    table = list(table)
    if root is None:
        return [DriftIssue(str(r), f"{package} is not installed", r.key)
                for r in table if r.kind is not HookKind.BINDING]
    issues: list[DriftIssue] = []
    trees: dict[str, ast.Module | None] = {}
    for row in table:
        if row.module not in trees:
            path = _module_file(root, row.module)
            trees[row.module] = _parse(path) if path is not None else None
        tree = trees[row.module]
        # a drifted binding disables nothing: the function is still wrapped where it lives
        key = "" if row.kind is HookKind.BINDING else row.key
        if tree is None:
            issues.append(DriftIssue(str(row), "module not found", key))
            continue
        if row.kind is HookKind.BINDING:
            names = frozenset({row.attribute})
            found = [i for i in _imports(tree, row.module, False, names) if i.top_level]
            if not found:
                issues.append(DriftIssue(str(row), "no longer imported by name here"))
            continue
        node = _find_def(tree, row.attribute)
        if node is None:
            issues.append(DriftIssue(str(row), "not defined here (moved or renamed?)", row.key))
            continue
        found_sig = _param_names(node.args)
        if found_sig != row.signature:
            issues.append(DriftIssue(
                str(row), f"signature ({', '.join(found_sig)}) != verified "
                f"({', '.join(row.signature)})", row.key))
    return issues


def scan_by_name_imports(names: Iterable[str], root: Path | None = None,
                         package: str = "vllm") -> list[ByNameImport]:
    """Every ``from x import name`` of ``names`` in the package's source (ast, no import)."""
    root = root or source_root(package)
    if root is None:
        return []
    wanted = frozenset(names)
    out: list[ByNameImport] = []
    for dirpath, _, files in os.walk(root):
        for fname in sorted(files):
            if not fname.endswith(".py"):
                continue
            path = Path(dirpath) / fname
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            if not any(n in text for n in wanted):  # cheap pre-filter before parsing
                continue
            tree = _parse(path)
            if tree is not None:
                out += _imports(tree, _module_name(root, package, path),
                                fname == "__init__.py", wanted)
    return out


def missing_bindings(table: Iterable[HookRow] = TABLE, root: Path | None = None,
                     package: str = "vllm") -> list[ByNameImport]:
    """By-name imports of a target function from a module that holds it, not in the table.

    A module *holds* a target when it defines it or imports it by name at top level from a
    module that holds it (re-exports count). Every holder must be a table row: a top-level
    importer keeps vLLM's original function otherwise, and a lazy import inside a function
    reads the holder it imports from, which must be patched.
    """
    table = list(table)
    homes = {r.function: r.module for r in table if r.kind is HookKind.FUNCTION}
    imports = scan_by_name_imports(homes, root, package)
    missing: list[ByNameImport] = []
    for name, home in homes.items():
        rows = {r.module for r in table if r.function == name and r.kind is not HookKind.METHOD}
        holders = {home}
        changed = True
        while changed:
            changed = False
            for imp in imports:
                if (imp.name == name and imp.top_level and imp.source in holders
                        and imp.module not in holders):
                    holders.add(imp.module)
                    changed = True
        for imp in imports:
            if imp.name != name or imp.source not in holders:
                continue
            if imp.source not in rows or (imp.top_level and imp.module not in rows):
                missing.append(imp)
    return sorted(missing, key=lambda i: (i.module, i.line))


def check_source(table: Iterable[HookRow] = TABLE, root: Path | None = None,
                 package: str = "vllm", version: str | None = None) -> DriftReport:
    """The version and row checks of one installation (by-name scan excluded: it is slow)."""
    return DriftReport(version if version is not None else installed_version(package),
                       check_rows(table, root, package))


def _allowed() -> bool:
    return os.environ.get(ALLOW_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def preflight(mode: str, report: DriftReport | None = None) -> DriftReport:
    """Check the installed vLLM; warn once, and refuse in ``strict`` mode unless allowed."""
    report = report if report is not None else check_source()
    if report.clean:
        logger.debug("derivgraph: %s", report.message())
        return report
    if mode == "strict" and not _allowed():
        raise VllmDriftError(
            f"{Rule.VLLM_DRIFT}: derivgraph strict mode refuses to start: {report.message()}"
            f"\n    fix: use a verified vLLM ({', '.join(VERIFIED_VLLM_VERSIONS)}), extend the "
            f"hook table for this one (docs/vllm-support.md), or set {ALLOW_ENV}=1 to run "
            f"with the targets above unwrapped")
    logger.warning("derivgraph: %s", report.message())
    return report
