"""What the static audit reads of a scanned module's source to follow a selection: its syntax
tree (:func:`parsed`: the one way a module or class body is read with :mod:`ast`), its top-level
classes and their methods, what it defines or imports, and the modules it imports functions from.

It sits below :mod:`.selection` and the rules selection combines (:mod:`.bound_classes`,
:mod:`.rejected`, :mod:`.preconditions`, :mod:`.backend_branches`) in the import graph.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Sequence
from typing import Protocol, TypeVar

from derivgraph.audit.static.walk import walk

__all__ = [
    "CLASS_NAME",
    "ReaderIndex",
    "TextOffsets",
    "class_node",
    "close_bracket",
    "defining_module",
    "function_node",
    "module_classes",
    "module_text",
    "parsed",
    "top_level_class",
]

_T = TypeVar("_T")


class ReaderIndex(Protocol):
    """What the selection rules read of :class:`.readers.ReaderIndex` (which imports these
    modules): the scanned files' (shown path, text) and its per-index memo."""

    files: Sequence[tuple[str, str]]

    def memo(self, key: str, make: Callable[[], _T]) -> _T: ...


CLASS_NAME = re.compile(r"\b([A-Z]\w*)\b")
"""A capitalized name (a class's; an enum's)."""


def defining_module(index: ReaderIndex, function: str, home: str) -> str:
    """The text of the scanned module ``home`` imports ``function`` from (``from a.b import
    function``, also inside a function or a bracketed list), or "" (not found, not scanned)."""
    imports = index.memo(f"imports {hash(home)}", lambda: [
        (m.group(1), m.group(2)) for m in re.finditer(
            r"\bfrom[ \t]+([\w.]+)[ \t]+import[ \t]*(\([^)]*\)|[^\n]*)", home)])
    for module, names in imports:
        if re.search(rf"\b{re.escape(function)}\b", names):
            return module_text(index, "/" + module.replace(".", "/") + ".py")
    return ""


def module_text(index: ReaderIndex, tail: str) -> str:
    """The text of the scanned file whose path ends with ``tail`` ("" when none)."""
    return index.memo(f"module {tail}", lambda: next(
        (t for shown, t in index.files if f"/{shown}".endswith(tail)), ""))


def module_classes(index: ReaderIndex, text: str) -> frozenset[str]:
    """The class names a module's text defines at its top level or imports at any depth (a
    selector imports its kernel classes inside its branches): its kernels' candidates, read
    from the parsed module (memoized), so a name in a comment or a string is none. A ``from``
    import counts its capitalized names, the imported one and its ``as`` name."""
    def read() -> frozenset[str]:
        tree = parsed(index, text)
        if tree is None:
            return frozenset()
        names = {n.name for n in tree.body if isinstance(n, ast.ClassDef)}
        for node in walk(tree):
            if isinstance(node, ast.ImportFrom):  # ``import x.y as F`` binds a module
                for alias in node.names:
                    names.update(n for n in (alias.name, alias.asname)
                                 if n and "." not in n and CLASS_NAME.fullmatch(n))
        return frozenset(names)

    return index.memo(f"module classes {hash(text)}", read)


def parsed(index: ReaderIndex, text: str) -> ast.Module | None:
    """The syntax tree of a scanned module's ``text`` (memoized), None when it does not parse:
    the one way the selection rules read a module or class body with :mod:`ast`."""
    def parse() -> ast.Module | None:
        try:
            return ast.parse(text)
        except SyntaxError:
            return None

    return index.memo(f"parsed {hash(text)}", parse)


def class_node(index: ReaderIndex, home: str, cls: str) -> ast.ClassDef | None:
    """The top-level class ``cls`` of module ``home`` as parsed (None when not there)."""
    tree = parsed(index, home)
    return top_level_class(tree, cls) if tree is not None else None


def top_level_class(tree: ast.Module, name: str) -> ast.ClassDef | None:
    """The class ``name`` defined at the top level of ``tree`` (None when not there)."""
    return next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name), None)


def function_node(node: ast.ClassDef | ast.Module | None,
                  name: str) -> ast.FunctionDef | None:
    """The function ``name`` defined directly in the body of class or module ``node`` (a
    method, or a module's top-level function; None when not there or ``node`` is None)."""
    return next((n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == name),
                None) if node is not None else None


def close_bracket(text: str, start: int) -> int:
    """Just past the bracket that closes the one opened before ``start``."""
    end, depth = start, 1
    while end < len(text) and depth:
        depth += {"(": 1, "[": 1, ")": -1, "]": -1}.get(text[end], 0)
        end += 1
    return end


class TextOffsets:
    """Offsets in a module's text of a parsed node's start and end, or of a (line, column)
    position as :mod:`ast` gives it: lines split at ``\\n`` as the tokenizer counts them (not
    :meth:`str.splitlines`, which also splits at form feeds), columns in UTF-8 bytes."""

    def __init__(self, text: str) -> None:
        self.lines = text.split("\n")
        self.starts = [0]
        for line in self.lines:
            self.starts.append(self.starts[-1] + len(line) + 1)

    def offset(self, line: int, col: int) -> int:
        """The text offset of ``ast``'s (1-based ``line``, byte ``col``)."""
        text = self.lines[line - 1] if line <= len(self.lines) else ""
        chars = col if text.isascii() else len(text.encode()[:col].decode(errors="ignore"))
        return self.starts[line - 1] + chars

    def start(self, node: ast.AST) -> int:
        """Where ``node`` starts in the text."""
        return self.offset(node.lineno, node.col_offset)  # type: ignore[attr-defined]

    def end(self, node: ast.AST) -> int:
        """Just past where ``node`` ends in the text."""
        return self.offset(node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]
