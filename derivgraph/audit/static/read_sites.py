"""Where one read of a stored tensor goes: the calls whose brackets hold it, and the uses of the
local its statement assigns it to.

A read that is one argument line of a call spanning lines (``wrapper.run(\\n x=...,\\n
w1_weight_sf=self.w1_sf_mma,``) is handed to that call, whose name the line does not show
(:func:`enclosing_calls`). A read assigned to a local (``buf = self._fused_buf``, ``scales =
[self.w1_scale, ...]``) is consumed where the local is used (:func:`local_uses`): a plain alias
whose every use is a check (``.shape``, ``is None``, an ``assert``) is itself only a check
(:func:`weak_use`), and a local handed to a kernel call makes the read a kernel call's.
"""

from __future__ import annotations

import bisect
import keyword
import re
from collections.abc import Callable
from typing import Protocol

__all__ = ["CONDITION", "META_READ", "NONE_TEST", "alias_handoff", "alias_uses", "kernel_callee",
           "local_uses", "weak_use"]

META_READ = re.compile(r"\.(?:device|dtype|shape|ndim|is_cuda)\b|\.(?:size|numel|dim)\(")
"""A metadata query right after a read: the value itself is not consumed."""
NONE_TEST = re.compile(r"[ \t]*(?:is(?:[ \t]+not)?|[!=]=)[ \t]*None\b")
CONDITION = re.compile(r"(?:assert|if|elif|while)\b")
_LOCAL_CHECK = re.compile(r"\.(?:stride|element_size|is_pinned|is_contiguous)\(")
"""Metadata queries a local alias is checked by besides :data:`META_READ`."""
_ASSIGNED = re.compile(r"([A-Za-z_]\w*)[ \t]*=(?!=)[ \t]*")
_CALL_NAME = re.compile(r"([A-Za-z_][\w.]*)[ \t]*$")
_LINE_REST = re.compile(r"[ \t]*(?:#[^\n]*)?(?:\n|$)")
_ALIAS_HEAD = re.compile(r"[ \t]*[A-Za-z_]\w*[ \t]*=(?!=)[ \t]*")
"""The head of a one-line plain alias statement: ``local = `` from the line's start."""
_CONTAINERS = frozenset({"dict", "list", "tuple", "set", "frozenset"})
"""Builders of a container: looked through like brackets (the container is handed on)."""


class Defs(Protocol):
    """What this module reads of a file's definition table (:class:`.readers._FileDefs`)."""

    rows: list[tuple[int, int, str, str, bool]]  # (pos, indent, kind, name, is property)
    starts: list[int]

    def statement_start(self, pos: int) -> int: ...


def _function_end(text: str, defs: Defs, stmt: int) -> int:
    """Where the function holding the statement at ``stmt`` ends (the next ``def``/``class``
    at its indent or less; the end of the text when none)."""
    indent = stmt - (text.rfind("\n", 0, stmt) + 1)
    k = bisect.bisect_right(defs.starts, stmt) - 1
    while k >= 0 and not (defs.rows[k][2] == "def" and defs.rows[k][1] < indent):
        k -= 1
    if k < 0:
        return len(text)
    own = defs.rows[k][1]
    return next((r[0] for r in defs.rows[k + 1:] if r[1] <= own), len(text))


def local_uses(text: str, defs: Defs, pos: int,
               stmt: int | None = None) -> tuple[str, list[tuple[int, int]]] | None:
    """The local the statement holding ``pos`` (starting at ``stmt`` when known) assigns
    (``local = ...``) and its uses after that statement in the same function, as ``(start,
    end)`` of the name (its rebindings, often in another branch, and keyword names
    ``local=`` are skipped); None when the statement assigns no plain local."""
    stmt = defs.statement_start(pos) if stmt is None else stmt
    m = _ASSIGNED.match(text, stmt)
    if m is None or m.end() > pos:
        return None
    local = m.group(1)
    uses: list[tuple[int, int]] = []
    for u in re.compile(rf"(?<![\w.]){re.escape(local)}\b(?![ \t]*=(?!=))").finditer(
            text, _statement_end(text, pos), _function_end(text, defs, stmt)):
        uses.append((u.start(), u.end()))
    return local, uses


def _statement_end(text: str, pos: int) -> int:
    """Where the statement holding ``pos`` ends: the first newline outside brackets after it
    (strings holding brackets are rare in an assignment's value)."""
    depth, k = 0, pos
    while k < len(text):
        c = text[k]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "\n" and depth <= 0:
            return k
        k += 1
    return k


def alias_uses(text: str, defs: Defs, start: int, end: int) -> list[tuple[int, int]] | None:
    """The uses of ``local`` when the read ``text[start:end]`` is a whole plain alias statement
    (``local = holder.attr`` alone on its line); None otherwise."""
    line = text.rfind("\n", 0, start) + 1
    if _LINE_REST.match(text, end) is None or _ALIAS_HEAD.fullmatch(text, line, start) is None:
        return None
    found = local_uses(text, defs, start, line + len(text[line:start]) - len(
        text[line:start].lstrip(" \t")))
    return found[1] if found else None


def alias_handoff(text: str, defs: Defs, start: int, end: int) -> int | None:
    """Where a plain alias (``buf = self._fused_buf`` alone on its line, the read
    ``text[start:end]``) is handed on: the start of the local's first use that is not a check
    (:func:`weak_use`) when that use is an argument of a call (``torch.mm(x, buf["w"])``), the
    read that consumes the value; None otherwise."""
    uses = alias_uses(text, defs, start, end)
    use = next((u for u in uses if not weak_use(text, defs, *u)), None) if uses else None
    if use is None or not enclosing_calls(text, defs, use[0]):
        return None
    return use[0]


def weak_use(text: str, defs: Defs, start: int, end: int) -> bool:
    """Whether the use ``text[start:end]`` only checks the value: a metadata query, a ``None``
    test, or any use in an ``assert`` or an ``if``/``while`` condition."""
    if META_READ.match(text, end) or _LOCAL_CHECK.match(text, end) or NONE_TEST.match(text, end):
        return True
    return CONDITION.match(text, defs.statement_start(start)) is not None


def enclosing_calls(text: str, defs: Defs, pos: int,
                    stmt: int | None = None) -> list[str]:
    """The dotted names of the calls whose brackets hold ``pos``, innermost first (from the
    start of its statement, ``stmt`` when known; tuples, lists and container builders such as
    ``dict(...)`` are looked through; a call of a call's result, ``make()(...)``, is named by
    the maker)."""
    start = defs.statement_start(pos) if stmt is None else stmt
    opened: list[int] = []
    for k in range(start, pos):
        if text[k] in "([{":
            opened.append(k)
        elif text[k] in ")]}" and opened:
            opened.pop()
    out = []
    for k in reversed(opened):
        if text[k] != "(":
            continue
        head = k
        while head > start and text[head - 1] in " \t":
            head -= 1
        if head > start and text[head - 1] == ")":  # ``make()(...)``: the maker names the call
            head = _opening(text, start, head - 1)
        m = _CALL_NAME.search(text, max(head - 200, start), head)
        if m and not keyword.iskeyword(m.group(1)) and m.group(1) not in _CONTAINERS:
            out.append(m.group(1))
    return out


def _opening(text: str, start: int, close: int) -> int:
    """The position of the ``(`` that the ``)`` at ``close`` closes (``start`` when none)."""
    depth = 0
    for k in range(close, start - 1, -1):
        depth += {")": 1, "(": -1}.get(text[k], 0)
        if depth == 0:
            return k
    return start


def kernel_callee(text: str, defs: Defs, pos: int, is_kernel: Callable[[str], bool]) -> str:
    """The kernel call the read at ``pos`` is handed to, "" when none: the innermost call
    holding it that ``is_kernel`` holds; when no call holds it and its statement assigns a
    local (``scales = [..., self.w2_scale, ...]``), the kernel call holding the local's first
    use that is not a check (one hop)."""
    stmt = defs.statement_start(pos)
    calls = enclosing_calls(text, defs, pos, stmt)
    if calls:  # an argument: handed to that call, not to the local it computes
        return next((c for c in calls if is_kernel(c)), "")
    found = local_uses(text, defs, pos, stmt)
    use = next((u for u in found[1] if not weak_use(text, defs, *u)), None) if found else None
    if use is None:
        return ""
    return next((c for c in enclosing_calls(text, defs, use[0]) if is_kernel(c)), "")
