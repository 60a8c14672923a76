"""Render a static-audit report as JSON or text (a ``rich`` table when rich is installed)."""

from __future__ import annotations

import importlib
import io
import json
from collections.abc import Sequence
from types import ModuleType

from .static import StaticFinding, StaticReport
from .static_sites import CATEGORIES

__all__ = ["render_json", "render_text"]

_COLUMNS = ("location", "class.function", "attribute", "category", "why")


def render_json(report: StaticReport) -> str:
    """A JSON list of every site (declared ones carry ``"declared": true``)."""
    return json.dumps([f.as_json() for f in report.findings], indent=2)


def _rich() -> ModuleType | None:
    try:
        return importlib.import_module("rich")
    except ImportError:
        return None


def _row(f: StaticFinding) -> tuple[str, str, str, str, str]:
    where = f.function if not f.cls or f.function.startswith(f"{f.cls}.") else \
        f"{f.cls}.{f.function}"
    target = f"{f.owner}.{f.attr}" if f.owner else f.attr
    why = f.reason if not f.declared else f"declared by {f.spec}"
    return f.location, where, target, f.category, why


def _summary(report: StaticReport) -> list[str]:
    und, dec = report.undeclared(), report.declared()
    lines = [
        f"static audit: {report.files_scanned} files scanned, {report.files_audited} with "
        f"post-load code, {len(report.findings)} sites: {len(und)} undeclared, {len(dec)} "
        f"declared by {report.specs} spec(s), {report.seconds:.2f} s",
    ]
    counts = report.by_category()
    if counts:
        lines.append("undeclared by category: " + ", ".join(
            f"{cat} {counts[cat]}" for cat in CATEGORIES if counts.get(cat)))
    lines += [f"warning: {e}" for e in report.errors]
    return lines


def _suggestions(findings: Sequence[StaticFinding]) -> list[str]:
    out = ["", "suggested specs (fill in the TODOs, then pass the file with --specs):"]
    for f in findings:
        if f.suggestion:
            out += ["", f"# {f.location}", f.suggestion]
    return out


def _plain(rows: list[tuple[str, ...]], title: str) -> list[str]:
    if not rows:
        return []
    widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(_COLUMNS)]
    widths[-1] = len(_COLUMNS[-1])  # the last column is not padded
    out = ["", title, "  ".join(c.ljust(w) for c, w in zip(_COLUMNS, widths)).rstrip(),
           "  ".join("-" * w for w in widths)]
    out += ["  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip() for r in rows]
    return out


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
        table = table_mod.Table(title=title, show_lines=False, expand=True)
        for col, ratio in zip(_COLUMNS, (4, 3, 3, 2, 5)):
            table.add_column(col, overflow="fold", ratio=ratio, no_wrap=col == "category")
        for r in rows:
            table.add_row(*(rich.markup.escape(v) for v in r))
        console.print(table)
    return buf.getvalue().rstrip("\n")


def render_text(report: StaticReport, use_rich: bool | None = None, width: int = 160,
                color: bool = False, show_declared: bool = False,
                suggest: bool = False) -> str:
    """A human-readable report: tables of undeclared (and optionally declared) sites, a summary,
    and with ``suggest`` the YAML skeletons. ``use_rich=None`` uses rich when it is installed."""
    rich = _rich() if use_rich in (None, True) else None
    if use_rich and rich is None:
        raise ImportError("rich is not installed: pip install 'derivgraph[rich]'")
    und = report.undeclared()
    groups = [(f"undeclared derived state ({len(und)})", [_row(f) for f in und])]
    if show_declared:
        dec = report.declared()
        groups.append((f"declared by specs ({len(dec)})", [_row(f) for f in dec]))
    if rich is not None:
        importlib.import_module("rich.markup")
        lines = [_rich_tables(rich, groups, width, color)] if any(r for _, r in groups) else []
    else:
        lines = [line for title, rows in groups for line in _plain(rows, title)]
    lines += ["", *_summary(report)]
    if suggest and und:
        lines += _suggestions(und)
    return "\n".join(lines).lstrip("\n")
