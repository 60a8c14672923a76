"""Parse only what the audit reads: the code that holds or serves post-load code.

Parsing is most of the static audit's cost, and most of a model file is ``forward`` code. A file
is cut, by text, into top-level blocks (a ``def`` or ``class`` with its decorators, or a run of
other top-level statements), and a class block into its methods. The audit parses

* every non-``def``/``class`` block (imports, constants, ``if``/``try`` blocks: small);
* root functions whole, and root classes with only their root methods (``__init__`` too for a
  rebuilt-object class), every other method replaced by blank lines and a ``pass``;
* then what that code calls in the same file: functions whole, constructors, and methods called
  through ``self``/``cls``/``super()`` or a class name. A text pass guesses this up front; AST
  rounds over the reached functions add whatever the guess missed, until nothing is new.

Each piece is parsed on its own, padded with blank lines so line numbers stay true. When a piece
fails to parse (a cut inside a string that has text at column 0), the caller parses the whole
file instead, so the result never depends on the cut (tests compare both on the corpus).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from derivgraph.audit.static.scope import (
    LAZY_GUARD_RE,
    ROOT_ASSIGN_RE,
    ROOT_DEF_RE,
    ROOT_FUNCTIONS,
    FuncNode,
    FunctionIndex,
    ModuleScope,
    Reached,
)
from derivgraph.audit.static.staging import STEP_METHODS, has_staging_copy

__all__ = ["Block", "BlockParses", "parse_relevant", "split_blocks"]

_COL0_CHAR = re.compile(r"[^\s#)\]}]")
"""A character that starts a top-level line: not blank, not a comment nor a closing bracket."""
_COL0 = re.compile(r"\n(?=[^\s#)\]}])")
"""A newline before such a character (the ``\\n`` a search can skip to; ``^`` with
``re.M`` is tried at every position)."""
_HEAD = re.compile(r"(?:@[^\n]*\n(?:[ \t]*(?:#[^\n]*)?\n|[ \t]+[^\n]*\n|[)\]}][^\n]*\n)*)*"
                   r"(?:async[ \t]+)?(def|class)[ \t]+(\w+)")


@dataclass(frozen=True)
class Block:
    """A top-level chunk of source: ``kind`` is def, class or other."""

    kind: str
    name: str
    start: int  # offset of its first character
    end: int
    line: int  # 1-based line of its first character


def split_blocks(text: str) -> list[Block]:
    """Cut a file into top-level blocks at every line that starts in column 0."""
    starts = [0] if _COL0_CHAR.match(text) else []
    starts += [m.end() for m in _COL0.finditer(text)]
    blocks: list[Block] = []
    i = 0
    line = 1
    last = 0
    while i < len(starts):
        start = starts[i]
        line += text.count("\n", last, start)
        last = start
        head = _HEAD.match(text, start)
        if head:
            end_of_head = head.end()
            j = i + 1
            while j < len(starts) and starts[j] < end_of_head:
                j += 1
            kind, name = head.group(1), head.group(2)
        else:
            j = i + 1
            while j < len(starts) and not _HEAD.match(text, starts[j]):
                j += 1
            kind, name = "other", ""
        end = starts[j] if j < len(starts) else len(text)
        blocks.append(Block(kind, name, start, end, line))
        i = j
    return blocks


@dataclass
class _ClassText:
    """A class block's lines and the line ranges of its methods (at the class-body indent)."""

    indent: str
    lines: list[str]
    methods: dict[str, list[tuple[int, int]]]

    @classmethod
    def of(cls, source: str) -> _ClassText | None:
        lines = source.splitlines(keepends=True)
        indents = _method_indents(source, lines)
        if not indents:
            return None
        indent = min(indents, key=len)
        methods: dict[str, list[tuple[int, int]]] = {}
        current: tuple[str, int] | None = None
        decorator: int | None = None
        for i, line in enumerate(lines[1:], 1):
            if not (line.startswith(indent) and line[len(indent):len(indent) + 1] not in
                    ("", " ", "\t", "\n", "\r", "#", ")", "]", "}")):
                continue  # deeper, blank, a comment or a closing bracket: the same member
            if current is not None:
                methods.setdefault(current[0], []).append((current[1], decorator or i))
                current = None
            body = line[len(indent):]
            if body.startswith("@"):
                decorator = decorator if decorator is not None else i
                continue
            m = _DEF_NAME.match(body)
            if m:
                current = (m.group(1), decorator if decorator is not None else i)
            decorator = None
        if current is not None:
            methods.setdefault(current[0], []).append((current[1], len(lines)))
        return cls(indent, lines, methods)

    def render(self, keep: set[str]) -> str:
        """The class with every method not in ``keep`` blanked out (line numbers unchanged)."""
        out = list(self.lines)
        for name, ranges in self.methods.items():
            if name in keep:
                continue
            for first, end in ranges:
                for i in range(first, end):
                    out[i] = "\n"
                out[first] = f"{self.indent}pass\n"
        return "".join(out)


_METHOD_LINE = re.compile(r"([ \t]+)(?:async[ \t]+)?def[ \t]+\w+")
_METHOD_LINES = re.compile(r"\n(?=([ \t]+))\1(?:async[ \t]+)?def[ \t]+\w+")
"""A ``def`` line after a newline: a search skips to each ``\\n``, and takes the line's whole
indent once (``(?=(...))\\1``: never retried shorter on the many lines that are no ``def``)."""
_OTHER_BREAKS = re.compile("[\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]")
"""Line boundaries of ``str.splitlines`` other than ``\\n``."""


def _method_indents(source: str, lines: list[str]) -> list[str]:
    """The indents of the ``def`` lines after the first line, in order: one search over the
    text where ``\\n`` is its only line boundary, else line by line (``lines``)."""
    if _OTHER_BREAKS.search(source) is not None:
        return [m.group(1) for ln in lines[1:] if (m := _METHOD_LINE.match(ln))]
    first = source.find("\n")
    return [] if first < 0 else [m.group(1) for m in _METHOD_LINES.finditer(source, first)]
_DEF_NAME = re.compile(r"(?:async[ \t]+)?def[ \t]+(\w+)")
_WHOLE = None  # "parse the whole block"


@dataclass
class BlockParses:
    """The blocks :func:`parse_relevant` parsed, kept for later calls that parse the same
    piece: a file audited again for other roots (a later round of the scan) parses most of
    its blocks (imports, constants, the same classes) as before.

    ``bodies`` is keyed by all that ``ast.parse`` reads (the file name, the block's first
    line, the block's text as parsed), so a kept body is what a new parse gives; no rule
    changes a parsed tree. ``indexes``: each kept function's :class:`.scope.FunctionIndex`
    (built from the node alone), keyed by the node."""

    bodies: dict[tuple[str, int, str], list[ast.stmt]] = field(default_factory=dict)
    indexes: dict[FuncNode, FunctionIndex] = field(default_factory=dict)


def parse_relevant(text: str, filename: str, ancestors: Mapping[str, frozenset[str]],
                   is_rebuilt: Callable[[str], bool],
                   extra: Iterable[tuple[str | None, str]] = (),
                   own_roots: bool = True,
                   seeds: Callable[[ModuleScope], list[Reached]] | None = None,
                   has_staging: bool | None = None,
                   parses: BlockParses | None = None) -> ModuleScope:
    """The scope of only the relevant code; raises SyntaxError if a piece does not parse.

    Root ``def`` blocks are parsed whole; root classes with only their root methods (and
    ``__init__`` for rebuilt-object classes), other methods blanked out. After each round, the
    calls in reached functions name what else to parse: same-file functions whole, same-file
    classes' ``__init__`` for constructors, and ``m`` of the same-file relatives of a class
    for ``self.m()``, ``cls.m()``, ``super().m()`` and ``C.m()``. ``has_staging``: whether the
    text holds a staging copy, when the caller knows (else it is tested here). ``parses``:
    the pieces parsed by earlier calls, to reuse and to grow (else kept for this call only).
    """
    blocks = split_blocks(text)
    named = {b.name: b for b in blocks if b.kind != "other"}
    wanted: dict[int, set[str] | None] = {}  # block start -> kept methods, or None for all
    classes: dict[int, _ClassText | None] = {}
    parsed: dict[int, list[ast.stmt]] = {}
    if parses is None:
        parses = BlockParses()
    bodies, cache = parses.bodies, parses.indexes

    def parse(block: Block) -> None:
        keep = wanted[block.start]
        source = text[block.start:block.end]
        if keep is not _WHOLE:
            if block.start not in classes:
                classes[block.start] = _ClassText.of(source)
            shape = classes[block.start]
            source = shape.render(keep) if shape else source
        key = (filename, block.line, source)
        body = bodies.get(key)
        if body is None:
            body = bodies[key] = ast.parse("\n" * (block.line - 1) + source, filename).body
        parsed[block.start] = body

    for block in blocks:
        source = text[block.start:block.end]
        if block.kind == "other" or (own_roots and block.kind == "def" and (
                ROOT_DEF_RE.search(source) or ROOT_ASSIGN_RE.search(source))):
            wanted[block.start] = _WHOLE
        elif block.kind == "class" and own_roots:
            # the root test once per block, not once per root name
            keep = {n for n in ROOT_FUNCTIONS if re.search(rf"def\s+{n}\b", source)} \
                if ROOT_DEF_RE.search(source) else set()
            if is_rebuilt(block.name):
                keep.add("__init__")
            staging = has_staging_copy(source)
            if LAZY_GUARD_RE.search(source) or ROOT_ASSIGN_RE.search(source) or staging:
                shape = classes.setdefault(block.start, _ClassText.of(source))
                if shape is not None:
                    for name, ranges in shape.methods.items():
                        body = "".join("".join(shape.lines[a:b]) for a, b in ranges)
                        if LAZY_GUARD_RE.search(body) or ROOT_ASSIGN_RE.search(body) \
                                or (staging and has_staging_copy(body)):
                            keep.add(name)
                    if staging:  # a step method calling the staging method refreshes it
                        keep |= STEP_METHODS & shape.methods.keys()
            if keep:
                wanted[block.start] = keep
    for cls, name in extra:
        block = named.get(cls or name)
        if block is not None and (block.kind == "class") == (cls is not None):
            _want(wanted, block, _WHOLE if cls is None else name)
    _close_textually(text, blocks, named, wanted, classes, ancestors)
    for block in blocks:
        if block.start in wanted:
            parse(block)
    assigned_roots = own_roots and bool(ROOT_ASSIGN_RE.search(text))
    staging_roots = own_roots and (has_staging_copy(text) if has_staging is None else has_staging)
    while True:
        module = ast.Module(body=[s for k in sorted(parsed) for s in parsed[k]], type_ignores=[])
        scope = ModuleScope(module, ancestors, cache)
        scope.has_assigned_roots = assigned_roots
        scope.has_staging_roots = staging_roots
        reached = scope.reached(seeds(scope) if seeds else None)
        changed = {named[n].start: named[n] for n, method in _needed(scope, reached, named,
                                                                     ancestors)
                   if _want(wanted, named[n], method)}
        if not changed:
            scope.roots_reach = reached
            return scope
        for block in changed.values():
            parse(block)


_SELF_CALL = re.compile(r"\.(?:(?<=\bself\.)|(?<=\bcls\.)|(?<=\bsuper\(\)\.))(\w+)\s*\(")
"""``m`` of ``self.m(``, ``cls.m(`` or ``super().m(``: it starts at the ``.`` (the receiver is
looked behind), so a search skips to each ``.`` instead of trying every position."""
_REVERSED_NAME_CALL = re.compile(r"\(\s*(\w+)(?![\w.])")
"""``f(`` not preceded by ``.`` or a word character, in reversed text (:func:`_name_calls`)."""


def _name_calls(text: str) -> list[str]:
    """The names of the calls ``f(`` in ``text`` not made on an object (``x.f(``), in order:
    ``(?<![\\w.])(\\w+)\\s*\\(`` searched in the reversed text, where it starts at the ``(`` (a
    search skips to each ``(``; forwards, each position of each word is tried)."""
    return [name[::-1] for name in reversed(_REVERSED_NAME_CALL.findall(text[::-1]))]


def _close_textually(text: str, blocks: list[Block], named: Mapping[str, Block],
                     wanted: dict[int, set[str] | None], classes: dict[int, _ClassText | None],
                     ancestors: Mapping[str, frozenset[str]]) -> None:
    """Grow ``wanted`` by the same-file calls written in the kept code, before parsing.

    A cheap first guess that saves parse rounds; the AST-driven rounds in
    :func:`parse_relevant` stay the authority (they add anything this misses).
    """
    def shape(block: Block) -> _ClassText | None:
        if block.start not in classes:
            classes[block.start] = _ClassText.of(text[block.start:block.end])
        return classes[block.start]

    family = {n: [m for m, b in named.items() if b.kind == "class" and m != n and (
        m in ancestors.get(n, ()) or n in ancestors.get(m, ()))]
        for n, b in named.items() if b.kind == "class"}
    queue = [b for b in blocks if b.start in wanted and b.kind != "other"]
    seen_text: set[tuple[int, str | None]] = set()
    while queue:
        block = queue.pop()
        keep = wanted[block.start]
        pieces: list[tuple[str | None, str]] = []
        if keep is _WHOLE:
            pieces.append((None, text[block.start:block.end]))
        else:
            cls_shape = shape(block)
            lines = cls_shape.lines if cls_shape else []
            for name in keep:
                for first, end in (cls_shape.methods.get(name, []) if cls_shape else []):
                    pieces.append((name, "".join(lines[first:end])))
        for key, piece in pieces:
            if (block.start, key) in seen_text:
                continue
            seen_text.add((block.start, key))
            for callee in _name_calls(piece):
                other = named.get(callee)
                if other is None or other.start == block.start:
                    continue
                method = _WHOLE if other.kind == "def" else "__init__"
                if _want(wanted, other, method):
                    queue.append(other)
            if block.kind != "class":
                continue
            for method in set(_SELF_CALL.findall(piece)):
                for name in [block.name, *family.get(block.name, [])]:
                    other = named[name]
                    other_shape = shape(other)
                    if other_shape and method in other_shape.methods and _want(
                            wanted, other, method):
                        queue.append(other)


def _want(wanted: dict[int, set[str] | None], block: Block, method: str | None) -> bool:
    """Add ``method`` (None: the whole block) to what is kept of ``block``; True if it grew."""
    keep = wanted.get(block.start, set())
    if keep is _WHOLE or (method is not _WHOLE and block.start in wanted and method in keep):
        return False
    wanted[block.start] = _WHOLE if (block.kind == "def" or method is _WHOLE) else \
        {*keep, method}
    return True


def _needed(scope: ModuleScope, reach: list[Reached], named: Mapping[str, Block],
            ancestors: Mapping[str, frozenset[str]]) -> set[tuple[str, str | None]]:
    """(block name, method) pairs the ``reach`` of ``scope`` calls; method None for a whole
    block."""
    need: set[tuple[str, str | None]] = set()
    class_names = [n for n, b in named.items() if b.kind == "class"]
    for reached in reach:
        cls = reached.cls
        lineage = scope.lineage(cls) if cls else frozenset()
        for node in scope.function_index(reached.func).calls:
            f = node.func
            if isinstance(f, ast.Name) and f.id in named:
                need.add((f.id, _WHOLE if named[f.id].kind == "def" else "__init__"))
            elif isinstance(f, ast.Attribute):
                recv = f.value
                if isinstance(recv, ast.Name) and recv.id in named:
                    if named[recv.id].kind == "class":
                        need |= {(n, f.attr) for n in class_names if n == recv.id
                                 or n in ancestors.get(recv.id, ())}
                elif cls and isinstance(recv, ast.Name) and recv.id in ("self", "cls"):
                    need |= {(n, f.attr) for n in class_names
                             if n in lineage or cls in ancestors.get(n, ())}
                elif (cls and isinstance(recv, ast.Call) and isinstance(recv.func, ast.Name)
                      and recv.func.id == "super"):
                    need |= {(n, f.attr) for n in class_names if n in lineage and n != cls}
    return need
