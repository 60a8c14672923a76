"""The tree-wide index of the static audit: classes, methods, functions and attribute types.

Built from text (one regular-expression pass per file, no parsing), so it costs little on the
whole vLLM tree. The audit of one file uses it to follow calls into other files:

* a module-level function imported from another module (``from derivgraph.audit.utils import f``;
``mod.f()``);
* ``self.m()`` to an ancestor or a subclass (an override) defined in another file;
* ``self.<attr>.m()`` through the class of ``attr`` (``self.model = DFlashModel(...)``);
* ``x.m()`` where ``isinstance(x, C)`` narrows ``x``;
* ``layer.m()`` on an unknown receiver, when only a few classes of the tree define ``m``.

It also summarises helpers across files by their return annotation: a tensor, a Python scalar
(``-> float``) or a dataclass whose fields are tensors (a container).

The same pass over a file's text gives what else the tree-wide context takes from it
(:func:`scan_file`): every class statement with its base short names (:func:`class_statements`,
nested classes too) and the module-level functions annotated to return a tensor.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from derivgraph.audit.static.ast import returns_placeholder

__all__ = ["DEF_HEADER_END", "ClassEntry", "FileScan", "TreeIndex", "build_index",
           "class_statements", "index_file", "merged_index", "scan_file"]

# Each pattern starts with a literal so the regex engine can skip ahead; line starts are
# checked in code.
_CLASS_RE = re.compile(r"class[ \t]+(\w+)[ \t]*(?:\(((?:[^()]|\([^()]*\))*)\))?[ \t]*:")
_DEF_RE = re.compile(r"def[ \t]+(\w+)[ \t]*\(")
_ATTR_RE = re.compile(r"self\.(\w+)(?!\w)[ \t]*(?::[^=\n]*)?=[ \t]*(?:[\w.]+\.)?([A-Z]\w*)\(")
"""``self.<attr> = [mod.]Class(`` (``(?!\\w)``: the name is not retried shorter on a miss)."""
_DATACLASS_RE = re.compile(r"@(?:dataclasses\.)?dataclass\b")
_FIELD_RE = re.compile(r"^([ \t]+)\w+[ \t]*:[ \t]*([^=\n]*)", re.M)
_TENSOR_TYPE = re.compile(r"\b(?:Tensor|Parameter)\b")
DEF_HEADER_END = re.compile(
    r"\)[ \t]*(?:->((?:[^:\n\[]|\[(?:[^\[\]]|\[[^\[\]]*\])*\])*))?:[ \t]*(?:#[^\n]*)?$",
    re.M)
"""The end of a ``def`` header and its return annotation (which may span lines inside
brackets: ``-> tuple[\n    torch.Tensor,\n    ...]``)."""
_WORD = re.compile(r"\w+")
_PROPERTY_RETURN = re.compile(
    r"[ \t]*\n[ \t]*return[ \t]+self\.(\w+(?:\.\w+)+)[ \t]*(?:#[^\n]*)?\n")
"""A method body that is one ``return self.<object>.<field>`` (after the header)."""
_SCALAR_TYPE = re.compile(r"^\s*(?:float|int)\s*$")
_TENSOR_WORD = re.compile(r"Tensor|Parameter|Buffer")
_PLACEHOLDER_HINT = re.compile(r"\((?<=empty\(|zeros\()\s*(?:0\s*[,)]|\(\s*0\s*,)")
"""A 0-element allocation in the text (``empty(0, ...)``, ``zeros((0, ...``): the file may define
a helper returning a placeholder. It starts at the ``(`` (the name is looked behind), so a
search skips to each ``(`` instead of trying every position; a search from ``pos`` can see the
name before ``pos``, which never matters here: searches start at a line's end or after a
``def f(``."""


@dataclass
class ClassEntry:
    """A class statement: where it is, its base short names, its methods."""

    name: str
    module: str
    file: int  # index into the scanned files
    bases: tuple[str, ...]
    methods: set[str] = field(default_factory=set)
    tensor_fields: bool = False
    dataclass: bool = False
    field_types: frozenset[str] = frozenset()  # words of the field annotations (dataclasses)


@dataclass
class TreeIndex:
    """What the whole scanned tree defines, by short and qualified names."""

    classes: dict[str, list[ClassEntry]] = field(default_factory=dict)
    modules: dict[str, int] = field(default_factory=dict)  # module name -> file index
    functions: dict[str, int] = field(default_factory=dict)  # qualified function -> file index
    returns: dict[str, str] = field(default_factory=dict)  # qualified function -> annotation
    attr_types: dict[tuple[str, str], set[str]] = field(default_factory=dict)
    method_owners: dict[str, set[str]] = field(default_factory=dict)  # method -> class names
    subclasses: dict[str, set[str]] = field(default_factory=dict)  # class -> descendants
    placeholders: set[str] = field(default_factory=set)  # qualified: returns a 0-element tensor
    method_returns: dict[str, str] = field(default_factory=dict)  # "Class.method" -> annotation
    # "Class.prop" -> "obj.field": a @property whose body is ``return self.obj.field``
    property_chains: dict[str, str] = field(default_factory=dict)

    def entries(self, name: str) -> list[ClassEntry]:
        """Every class statement with this short name."""
        return self.classes.get(name, [])

    def containers(self) -> frozenset[str]:
        """Dataclasses of the tree with a tensor-annotated field, dataclasses with a field of
        such a type (a config of descriptors), and the subclasses of all of these."""
        found = {n for n, es in self.classes.items()
                 if any(e.dataclass and e.tensor_fields for e in es)}
        grew = True
        while grew:
            more = {n for n, es in self.classes.items() if n not in found and any(
                e.dataclass and e.field_types & found for e in es)}
            more |= {sub for n in found for sub in self.subclasses.get(n, ())} - found
            grew = bool(more)
            found |= more
        return frozenset(found)

    def container_functions(self, kinds: frozenset[str] | None = None) -> frozenset[str]:
        """Qualified functions, and ``Class.method`` names, annotated to return such a
        dataclass (``-> ScaleDesc``, ``-> QuantConfig | None``); ``kinds``: the
        :meth:`containers`, when the caller has them."""
        kinds = self.containers() if kinds is None else kinds
        return frozenset(n for table in (self.returns, self.method_returns)
                         for n, a in table.items() if kinds.intersection(_WORD.findall(a)))

    def placeholder_functions(self) -> frozenset[str]:
        """Qualified module-level functions whose every ``return`` gives a 0-element tensor
        (``marlin_make_empty``): what they return is a placeholder, not derived state."""
        return frozenset(self.placeholders)

    def scalar_functions(self) -> frozenset[str]:
        """Qualified functions annotated to return a Python ``float`` or ``int``."""
        return frozenset(n for n, a in self.returns.items() if _SCALAR_TYPE.match(a))

    def resolve_method(self, cls: str, method: str,
                       ancestors: Mapping[str, frozenset[str]]) -> Iterator[ClassEntry]:
        """The entries of the nearest class among ``cls`` and its ancestors that defines
        ``method`` (several when that short name is defined in several files)."""
        for name in [cls, *sorted(ancestors.get(cls, frozenset()) - {cls})]:
            found = [e for e in self.entries(name) if method in e.methods]
            if found:
                yield from found
                return

    def overrides(self, cls: str, method: str, limit: int) -> list[ClassEntry]:
        """Subclasses of ``cls`` anywhere in the tree that define ``method`` (none past
        ``limit``: a method every backend overrides is a dispatch point, not a helper)."""
        found = [e for sub in sorted(self.subclasses.get(cls, ())) for e in self.entries(sub)
                 if method in e.methods]
        return found if len(found) <= limit else []


@dataclass
class FileScan:
    """One pass over a file's text: its index entries, its class statements and its
    module-level functions annotated to return a tensor."""

    index: TreeIndex  # this file's entries alone (:func:`index_file`)
    classes: list[tuple[str, list[str]]]  # (class, base short names): :func:`class_statements`
    tensor_functions: list[tuple[str, str]]  # (module-level function, its return annotation)


def _class_statement(text: str, m: re.Match[str]) -> tuple[str, list[str]] | None:
    """(class name, base short names) of a ``class`` match that starts its line (after any
    indentation), else None ("class" inside a line)."""
    line_start = text.rfind("\n", 0, m.start()) + 1
    if text[line_start:m.start()].strip(" \t"):
        return None
    return m.group(1), list(_bases(m.group(2)))


def class_statements(text: str) -> Iterator[tuple[str, list[str]]]:
    """(class name, base short names) for every class statement, nested ones too, without
    parsing the file."""
    for m in _CLASS_RE.finditer(text):
        found = _class_statement(text, m)
        if found is not None:
            yield found


def _module_level_def(text: str, start: int) -> bool:
    """Whether the ``def`` at ``start`` begins its line, or follows ``async `` that does."""
    return not start or text[start - 1] == "\n" or (
        start >= 6 and text[start - 6:start] == "async "
        and (start == 6 or text[start - 7] == "\n"))


def _bases(raw: str | None) -> tuple[str, ...]:
    out = []
    for part in (raw or "").split(","):
        part = part.strip()
        if not part or "=" in part or part.startswith("*"):
            continue
        out.append(part.split("[", 1)[0].strip().rsplit(".", 1)[-1])
    return tuple(out)


def _indent(text: str, pos: int) -> str | None:
    """The whitespace before ``pos`` on its line, or None when other text precedes it."""
    line_start = text.rfind("\n", 0, pos) + 1
    prefix = text[line_start:pos]
    if prefix.startswith("async") or prefix.endswith("async "):
        prefix = prefix.replace("async", "").rstrip(" \t") if prefix.strip() == "async" else prefix
    return prefix if not prefix.strip(" \t") else None


def _scan_text(index: TreeIndex, file: int, module: str, text: str,
               classes: list[tuple[str, list[str]]] | None = None,
               tensor_functions: list[tuple[str, str]] | None = None) -> None:
    """Fill ``index`` with one file's entries; with the lists, also gather its class
    statements (:func:`class_statements`) and its module-level functions annotated to return
    a tensor (none when the text names neither ``Tensor`` nor ``Parameter``)."""
    events: list[tuple[int, str, re.Match[str]]] = []
    events += [(m.start(), "class", m) for m in _CLASS_RE.finditer(text)]
    events += [(m.start(), "def", m) for m in _DEF_RE.finditer(text)]
    if "self." in text:
        events += [(m.start(), "attr", m) for m in _ATTR_RE.finditer(text)]
    dataclass_at = {m.start() for m in _DATACLASS_RE.finditer(text)} if "dataclass" in text \
        else set()
    events.sort(key=lambda e: e[0])
    hint = "empty(" in text or "zeros(" in text
    hint = hint and _PLACEHOLDER_HINT.search(text) is not None
    current: ClassEntry | None = None
    method_indent: str | None = None
    tensors = tensor_functions if "Tensor" in text or "Parameter" in text else None
    for pos, kind, m in events:
        if classes is not None and kind == "class":
            found = _class_statement(text, m)
            if found is not None:
                classes.append(found)
        if tensors is not None and kind == "def" and _module_level_def(text, pos):
            header = DEF_HEADER_END.search(text, m.end())
            if header and header.group(1) and _TENSOR_WORD.search(header.group(1)):
                tensors.append((m.group(1), " ".join(header.group(1).split())))
        indent = _indent(text, pos) if kind != "attr" else ""
        if indent is None:
            continue
        if kind == "class" and indent == "":
            before = text.rfind("\n", 0, max(text.rfind("\n", 0, pos), 0)) + 1
            is_dc = any(before <= d < pos for d in dataclass_at)
            current = ClassEntry(m.group(1), module, file, _bases(m.group(2)), dataclass=is_dc)
            index.classes.setdefault(current.name, []).append(current)
            method_indent = None
            if is_dc:
                end = _next_col0(text, m.end())
                fields = [f.group(2) for f in _FIELD_RE.finditer(text, m.end(), end)]
                current.tensor_fields = any(_TENSOR_TYPE.search(f) for f in fields)
                current.field_types = frozenset(w for f in fields for w in _WORD.findall(f))
        elif kind == "def" and indent == "":
            current = None
            qualified = f"{module}.{m.group(1)}" if module else m.group(1)
            index.functions.setdefault(qualified, file)
            end = DEF_HEADER_END.search(text, m.end())
            if end and end.group(1):
                index.returns.setdefault(qualified, " ".join(end.group(1).split()))
            if hint and _returns_placeholder_text(text, pos, end.end() if end else m.end()):
                index.placeholders.add(qualified)
        elif kind == "def" and current is not None:
            if method_indent is None:
                method_indent = indent
            if indent == method_indent:
                current.methods.add(m.group(1))
                index.method_owners.setdefault(m.group(1), set()).add(current.name)
                end = DEF_HEADER_END.search(text, m.end())
                if end and end.group(1):
                    index.method_returns.setdefault(f"{current.name}.{m.group(1)}",
                                                    " ".join(end.group(1).split()))
                if end and "@property" in text[text.rfind("\n", 0, pos - len(indent) - 1):pos]:
                    body = _PROPERTY_RETURN.match(text, end.end())
                    if body:
                        index.property_chains.setdefault(f"{current.name}.{m.group(1)}",
                                                         body.group(1))
        elif kind == "attr" and current is not None:
            index.attr_types.setdefault((current.name, m.group(1)), set()).add(m.group(2))


_COL0_CODE = re.compile(r"^[^\s#)\]}]", re.M)


def _returns_placeholder_text(text: str, start: int, header_end: int) -> bool:
    """Whether the module-level function starting at ``start`` returns only placeholders (the
    body is parsed only when its text holds a 0-element allocation)."""
    end = _next_col0(text, header_end)
    if not _PLACEHOLDER_HINT.search(text, header_end, end):
        return False
    try:
        func = ast.parse(text[start:end]).body[0]
    except (SyntaxError, IndexError):
        return False
    return isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)) and returns_placeholder(func)


def _next_col0(text: str, pos: int) -> int:
    m = _COL0_CODE.search(text, pos)
    return m.start() if m else len(text)


def index_file(file: int, module: str, text: str) -> TreeIndex:
    """The entries of one file alone (file number ``file``), for :func:`merged_index`."""
    index = TreeIndex()
    _scan_text(index, file, module, text)
    return index


def scan_file(file: int, module: str, text: str) -> FileScan:
    """:func:`index_file` with the file's class statements and tensor functions, found in
    the same pass."""
    found = FileScan(TreeIndex(), [], [])
    _scan_text(found.index, file, module, text, found.classes, found.tensor_functions)
    return found


def _merge(index: TreeIndex, part: TreeIndex) -> None:
    """Add a later file's entries: the first entry of a name stays, as in one pass."""
    for name, entries in part.classes.items():
        index.classes.setdefault(name, []).extend(entries)
    for firsts, more in ((index.functions, part.functions), (index.returns, part.returns),
                         (index.method_returns, part.method_returns),
                         (index.property_chains, part.property_chains)):
        for key, value in more.items():
            firsts.setdefault(key, value)
    for key, types in part.attr_types.items():
        index.attr_types.setdefault(key, set()).update(types)
    for method, owners in part.method_owners.items():
        index.method_owners.setdefault(method, set()).update(owners)
    index.placeholders.update(part.placeholders)


def merged_index(parts: Sequence[tuple[str, TreeIndex]],
                 ancestors: Mapping[str, frozenset[str]]) -> TreeIndex:
    """The index of the files whose ``(module name, index_file(...))`` are ``parts``, in the
    order the audit numbers them."""
    index = TreeIndex()
    for i, (module, part) in enumerate(parts):
        index.modules.setdefault(module, i)
        _merge(index, part)
    for name, lineage in ancestors.items():
        for base in lineage:
            if base != name:
                index.subclasses.setdefault(base, set()).add(name)
    return index


def build_index(files: Sequence[tuple[str, str]],
                ancestors: Mapping[str, frozenset[str]]) -> TreeIndex:
    """The index of ``(module name, text)`` files, in the order the audit numbers them."""
    return merged_index([(module, index_file(i, module, text))
                         for i, (module, text) in enumerate(files)], ancestors)
