"""Render a static-audit report as JSON or text (a ``rich`` table when rich is installed).

Text rows are sorted by severity (error, warning, info), then by location; each row starts with
one clickable ``file:line`` and says, besides what the code does, what a reload does to it (the
consequence) and the fix in vLLM terms (:mod:`.semantics`).
"""

from __future__ import annotations

import importlib
import io
import json
from collections import Counter
from collections.abc import Sequence
from types import ModuleType

from derivgraph.audit.static.finding import StaticFinding, StaticReport
from derivgraph.audit.static.sites import CATEGORIES

__all__ = ["render_json", "render_text", "sort_findings"]

_COLUMNS = ("severity", "location", "class.function", "attribute", "category", "verdict", "why")
_WHOLE = ("severity", "location", "attribute")
#: Width the four other columns need to stay readable; narrower output gets plain blocks.
_OTHER_COLUMNS_MIN = 70


def render_json(report: StaticReport) -> str:
    """A JSON list of every site (declared ones carry ``"declared": true``), with ``severity``,
    ``store``, ``consequence``, ``fix``, ``key`` and ``verdict``."""
    return json.dumps([f.as_json() for f in report.findings], indent=2)


def sort_findings(findings: Sequence[StaticFinding]) -> list[StaticFinding]:
    """Errors first, then warnings, then info; by location within a severity."""
    return sorted(findings, key=lambda f: (f.severity.rank, f.file, f.line, f.col, f.attr))


def _rich() -> ModuleType | None:
    try:
        return importlib.import_module("rich")
    except ImportError:
        return None


def _where(f: StaticFinding) -> str:
    return f.function if not f.cls or f.function.startswith(f"{f.cls}.") else \
        f"{f.cls}.{f.function}"


def _target(f: StaticFinding) -> str:
    return f"{f.owner}.{f.attr}" if f.owner else f.attr


def _row(f: StaticFinding) -> tuple[str, ...]:
    why = f"declared by {f.spec}" if f.declared else \
        f"{f.reason}\nconsequence: {f.consequence}\nfix: {f.fix}"
    if not f.declared and f.evidence:
        why += f"\nevidence: {f.evidence}"
        if f.reader:
            why += f"\nreader: {f.reader}"
        if f.derives_from:
            why += f"\nweight: {f.derives_from}"
    return (f.severity.value, f.location, _where(f), _target(f), f.category, f.verdict.value, why)


def _summary(report: StaticReport) -> list[str]:
    """Counts that add up: sites = undeclared (literal names) + computed names + info +
    declared; the severity and category counts split the undeclared number exactly."""
    und, dec, dyn, info = report.undeclared(), report.declared(), report.dynamic(), \
        report.handled()
    sev = Counter(f.severity.value for f in und)
    lines = [
        f"static audit: {report.files_scanned} files scanned, {report.files_audited} with "
        f"post-load code, {len(report.findings)} sites: {len(und)} undeclared error/warning, "
        f"{len(dyn)} with a computed name, {len(info)} info, {len(dec)} declared by "
        f"{report.specs} spec(s), {report.seconds:.2f} s",
        f"undeclared by severity: error {sev.get('error', 0)}, warning "
        f"{sev.get('warning', 0)}; info {len(info)} (handled by the engine's reload; listed "
        "with --show-info)",
    ]
    counts = Counter(f.category for f in und)
    if counts:
        lines.append("undeclared by category: " + ", ".join(
            f"{cat} {counts[cat]}" for cat in CATEGORIES if counts.get(cat)))
    if dyn:
        lines.append(f"{len(dyn)} site(s) have a computed attribute name: no spec "
                     "can name them; review each")
    lines += [f"warning: {e}" for e in report.errors]
    if report.nothing_scanned:
        lines.append("nothing could be scanned (no files, or none parsed)")
    return lines


def _suggestions(findings: Sequence[StaticFinding]) -> list[str]:
    out = ["", "suggested specs (fill in the TODOs, then pass the file with --specs):"]
    for f in findings:
        if f.suggestion:
            out += ["", f"# {f.location}", f.suggestion]
    return out


def _plain(rows: list[tuple[str, ...]], title: str) -> list[str]:
    """One block per finding: a header line starting with ``file:line``, then the why lines."""
    if not rows:
        return []
    out = ["", title]
    for sev, loc, where, target, cat, verdict, why in rows:
        out.append(f"{loc}: {sev.upper()} {target} in {where} [{cat}, {verdict}]")
        out += [f"    {line}" for line in why.splitlines()]
    return out


def _table_width(groups: list[tuple[str, list[tuple[str, ...]]]]) -> int:
    """Columns a table needs to show severity and file:line whole and the rest readably."""
    rows = [r for _, rs in groups for r in rs]
    whole = sum(max((len(r[_COLUMNS.index(c)]) for r in rows), default=0) for c in _WHOLE)
    return whole + _OTHER_COLUMNS_MIN


def _rich_tables(rich: ModuleType, groups: list[tuple[str, list[tuple[str, ...]]]],
                 width: int, color: bool) -> str:
    console_mod = importlib.import_module("rich.console")
    table_mod = importlib.import_module("rich.table")
    buf = io.StringIO()
    console = console_mod.Console(file=buf, width=width, force_terminal=color,
                                  color_system="auto" if color else None, highlight=False)
    for title, rows in groups:
        if not rows:
            continue
        table = table_mod.Table(title=title, show_lines=True, expand=True)
        for i, (col, ratio) in enumerate(zip(_COLUMNS, (1, 4, 3, 3, 2, 2, 6))):
            whole = col in _WHOLE  # never cut or wrapped: severity, clickable file:line, attribute
            table.add_column(col, overflow="fold", ratio=None if whole else ratio,
                             no_wrap=whole or col == "category",
                             min_width=max(len(col), *(len(r[i]) for r in rows)) if whole
                             else None)
        for r in rows:
            table.add_row(*(rich.markup.escape(v) for v in r))
        console.print(table)
    return buf.getvalue().rstrip("\n")


def render_text(report: StaticReport, use_rich: bool | None = None, width: int = 160,
                color: bool = False, show_declared: bool = False, suggest: bool = False,
                show_info: bool = False) -> str:
    """A human-readable report: undeclared error/warning sites (sorted by severity), sites with
    computed names, optionally info and declared sites, a summary, and with ``suggest`` the YAML
    skeletons. ``use_rich=None`` uses rich when it is installed."""
    rich = _rich() if use_rich in (None, True) else None
    if use_rich and rich is None:
        raise ImportError("rich is not installed: pip install 'derivgraph[rich]'")
    und = sort_findings(report.undeclared())
    groups = [(f"undeclared derived state ({len(und)})", [_row(f) for f in und])]
    dyn = sort_findings(report.dynamic())
    groups.append((f"computed attribute names ({len(dyn)})", [_row(f) for f in dyn]))
    if show_info:
        info = sort_findings(report.handled())
        groups.append((f"handled by the engine's reload ({len(info)})", [_row(f) for f in info]))
    if show_declared:
        dec = sort_findings(report.declared())
        groups.append((f"declared by specs ({len(dec)})", [_row(f) for f in dec]))
    if rich is not None and use_rich is None and width < _table_width(groups):
        rich = None  # too narrow for a readable table: one block per finding instead
    if rich is not None:
        importlib.import_module("rich.markup")
        lines = [_rich_tables(rich, groups, width, color)] if any(r for _, r in groups) else []
    else:
        lines = [line for title, rows in groups for line in _plain(rows, title)]
    lines += ["", *_summary(report)]
    if suggest and und:
        lines += _suggestions(und)
    return "\n".join(lines).lstrip("\n")
