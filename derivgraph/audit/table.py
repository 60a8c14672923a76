"""Plain-text tables for reports: the audits, the demo and the command line print with it.

A leaf (standard library only), so every layer that prints a table can use it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

__all__ = ["text_table"]


def text_table(header: Sequence[str], rows: Iterable[Sequence[object]], *, align: str = "",
               widths: Sequence[int] = (), sep: str = "  ", rule: str | None = "columns",
               strip: bool = False) -> list[str]:
    """The lines of a table: the header, an optional rule, then one line per row.

    Each column is as wide as its widest cell, and at least ``widths[i]`` when given. ``align``
    holds one ``<`` (left, the default) or ``>`` (right) per column. ``rule``: ``"columns"``
    puts dashes under each column, ``"full"`` one dash line as wide as the table, ``None``
    none. ``strip`` drops trailing blanks from every line.
    """
    table = [[str(c) for c in header]] + [[str(c) for c in row] for row in rows]
    width = [max([len(r[i]) for r in table] + [widths[i] if i < len(widths) else 0])
             for i in range(len(header))]
    sides = [align[i] if i < len(align) else "<" for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        text = sep.join(f"{c:{a}{w}}" for c, a, w in zip(cells, sides, width))
        return text.rstrip() if strip else text

    lines = [line(table[0])]
    if rule == "columns":
        lines.append(sep.join("-" * w for w in width))
    elif rule == "full":
        lines.append("-" * (sum(width) + len(sep) * (len(width) - 1)))
    lines += [line(r) for r in table[1:]]
    return lines
