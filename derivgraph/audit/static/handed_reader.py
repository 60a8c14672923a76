"""The reader of a tensor handed on: ``self.x`` passed to an object the storing class builds.

A post-load step may keep a tensor on its own object and also hand it to an object it builds::

    self.b_strides1 = ...                                  # the store (a finding)
    self.moe_kernel = make_kernel(b_strides1=self.b_strides1)

    def make_kernel(b_strides1, ...):                      # a builder, in any file
        return Kernel(experts_cls(b_strides1=b_strides1))  # ``experts_cls``: a type argument

    class Experts:
        def __init__(self, b_strides1): self.b_strides1 = b_strides1
        def apply(self, ...): kernel(..., self.b_strides1, ...)   # the reader

No method of the storing class reads ``b_strides1`` after load, yet a kernel does.
:func:`handed_reader` follows the argument, for at most :data:`HANDOFF_DEPTH` calls, from a
call in a method of the storing class family that passes ``self.x`` (by keyword or position):

* to a class of the tree (``C(...)``, ``mod.C(...)``): its ``__init__`` parameter;
* to a function of the tree (``f(...)``, ``self.f(...)``): its parameter, then again wherever
  that function passes the parameter on;
* to a callable the function does not name (``experts_cls(...)``, a type argument), by keyword
  only: the parameter of the same name of a class the calling function names in its text
  (``assert issubclass(experts_cls, CutlassExpertsW4A8Fp8)``);

and where a constructor keeps the parameter (``self.y = param``) it names that class family's
read of ``self.y`` after load (:meth:`.readers.ReaderIndex.reader`). A constructor that keeps
the argument on an object nothing reads after load gives no reader.

A config of tensors may be handed on whole the same way: an experts class that keeps
``self.quant_config`` passes it to a function of the tree
(``rocm_aiter_fused_experts(..., quant_config=self.quant_config)``), whose body reads the field
(``w1_scale=quant_config.w1_scale``): :func:`config_field_read` follows the config from the
methods of the given classes that run after load into such a function's parameter (passed on
again for at most :data:`HANDOFF_DEPTH` calls) and names that read, the one on the path a
config takes without a special flag first (:func:`_default_path`).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass, replace

from derivgraph.audit.static.def_text import def_text
from derivgraph.audit.static.readers import Reader, ReaderIndex
from derivgraph.audit.static.source_tree import parsed
from derivgraph.audit.static.walk import walk

__all__ = ["HANDOFF_DEPTH", "Kept", "config_field_read", "handed_reader", "handed_tree",
           "kept_stores"]

HANDOFF_DEPTH = 3
"""How many calls an argument is followed through (a builder, a builder it calls, the
constructor)."""

# a literal start (``\n``) lets the regex engine skip ahead; the file's first line is apart
_HEAD = re.compile(r"\n(?:class[ \t]+(\w+)|def[ \t]+(\w+)[ \t]*\()")
_CLASS_WORD = re.compile(r"\b([A-Z]\w+)\b")
_SEARCH_BACK = 4000
"""How far before an argument the opening bracket of its call is looked for."""


@dataclass(frozen=True)
class _Def:
    """A function's text, the class it is a method of (None: module level), its file."""

    file: int
    cls: str | None
    name: str
    text: str


@dataclass(frozen=True)
class _Arg:
    """``value`` passed to ``callee`` as keyword ``keyword`` or at ``position``."""

    callee: str
    keyword: str | None
    position: int


class _Tree:
    """Where the classes and module-level functions of the scanned files are (text only)."""

    def __init__(self, index: ReaderIndex) -> None:
        self.index = index
        self.classes: dict[str, list[tuple[int, int]]] = {}
        self.functions: dict[str, list[tuple[int, int]]] = {}
        self._methods: dict[tuple[str, str], _Def | None] = {}
        for i, (_, text) in enumerate(index.files):
            text = "\n" + text  # positions below are one past the newline: offsets in text
            for m in _HEAD.finditer(text):
                if m.group(1):
                    self.classes.setdefault(m.group(1), []).append((i, m.start()))
                else:
                    self.functions.setdefault(m.group(2), []).append((i, m.start()))

    def method(self, cls: str, name: str) -> _Def | None:
        """``cls.name`` as defined in the class body (not inherited), first definition."""
        key = (cls, name)
        if key not in self._methods:
            self._methods[key] = self._method(cls, name)
        return self._methods[key]

    def _method(self, cls: str, name: str) -> _Def | None:
        for i, pos in self.classes.get(cls, ()):
            text = self.index.files[i][1]
            body = text[pos:_block_end(text, pos)]
            found = def_text(body, name, indent=r"[ \t]+")
            if found:
                return _Def(i, cls, name, found)
        return None

    def function(self, name: str) -> Iterator[_Def]:
        for i, pos in self.functions.get(name, ()):
            text = self.index.files[i][1]
            yield _Def(i, None, name, text[pos:_block_end(text, pos)])


def _block_end(text: str, pos: int) -> int:
    """The end of the top-level block starting at ``pos``."""
    m = re.compile(r"^(?![ \t\n#)\]}])", re.M).search(text, text.find("\n", pos) + 1)
    return m.start() if m else len(text)


def _params(func: str) -> list[str]:
    """The parameter names of a ``def`` text, ``self``/``cls`` left out."""
    depth, end = 0, len(func)
    for k, c in enumerate(func):
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                end = k
                break
    header = func[func.find("("):end]
    # annotations and defaults may hold brackets: only names right after ``(`` or a top ``,``
    names, depth = [], 0
    for k, c in enumerate(header):
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        if (c == "(" and depth == 1) or (c == "," and depth == 1):
            m = re.match(r"\s*\*{0,2}([A-Za-z_]\w*)", header[k + 1:])
            if m:
                names.append(m.group(1))
    return [n for n in names if n not in ("self", "cls")]


def _argument(text: str, start: int, end: int) -> _Arg | None:
    """The call that ``text[start:end]`` is a whole argument of, or None."""
    after = re.compile(r"\s*(?:#[^\n]*\n\s*)*[,)]").match(text, end)
    if after is None:
        return None
    k = start
    while k > 0 and text[k - 1] in " \t\n":
        k -= 1
    keyword = None
    if k > 1 and text[k - 1] == "=" and text[k - 2] not in "=!<>":
        base = max(k - 200, 0)
        m = re.search(r"([A-Za-z_]\w*)[ \t]*$", text[base:k - 1])
        if m is None:
            return None
        keyword, k = m.group(1), base + m.start()
        while k > 0 and text[k - 1] in " \t\n":
            k -= 1
    if k == 0 or text[k - 1] not in "(,":
        return None
    depth, commas, j = 0, 0, k - 1
    floor = max(j - _SEARCH_BACK, 0)
    while j >= floor:
        c = text[j]
        if c in ")]}":
            depth += 1
        elif c in "([{":
            if depth == 0:
                break
            depth -= 1
        elif c == "," and depth == 0:
            commas += 1
        j -= 1
    if j < floor or text[j] != "(":
        return None
    m = re.search(r"([A-Za-z_][\w.]*)[ \t]*$", text[max(j - 200, 0):j])
    if m is None:
        return None
    return _Arg(m.group(1), keyword, commas)


def _passes(func: _Def, value: re.Pattern[str]) -> Iterator[_Arg]:
    """The calls in ``func`` that pass a match of ``value`` as a whole argument."""
    for m in value.finditer(func.text):
        arg = _argument(func.text, m.start(), m.end())
        if arg is not None:
            yield arg


_TABLE_WORD = re.compile(r"[A-Za-z_]\w*")
"""A name :meth:`.readers.ReaderIndex.files_naming` finds (its ``.name`` search)."""


def handed_reader(index: ReaderIndex, cls: str | None, attr: str) -> Reader | None:
    """The read after load of ``self.<attr>`` (stored by class ``cls``) by an object its
    class family builds with it (module docstring), or None."""
    if not cls:
        return None
    family = index.family(cls)
    tree = index.memo("handed-tree", lambda: _Tree(index))
    value = re.compile(rf"\bself\.{re.escape(attr)}\b(?![\w.(\[])")
    seen: set[tuple[str, str | None, str]] = set()
    # only files with ``.<attr>`` can match ``value`` (the reader index's word table, in file
    # order); an attribute the table cannot hold (a non-ASCII first letter): every file
    named = index.files_naming(attr) if _TABLE_WORD.fullmatch(attr) else range(len(index.files))
    for i in named:
        text = index.files[i][1]
        if f"self.{attr}" not in text:
            continue
        for member in sorted(family):
            for pos in (p for f, p in tree.classes.get(member, ()) if f == i):
                body = text[pos:_block_end(text, pos)]
                here = _Def(i, member, member, body)
                for arg in _passes(here, value):
                    found = _follow(index, tree, here, arg, 1, seen)
                    if found is not None:
                        return found
    return None


def config_field_read(index: ReaderIndex, classes: frozenset[str], holder: str,
                      field: str) -> Reader | None:
    """The read of ``<param>.<field>`` in a function of the tree that a method of ``classes``
    running after load hands ``self.<holder>`` to whole, as parameter ``param`` (module
    docstring), with the calls that hand it on; None when no such read."""
    tree = index.memo("handed-tree", lambda: _Tree(index))
    seen: set[tuple[str, str | None, str]] = set()
    for i, start, end in index.self_reads(classes, holder):
        arg = _argument(index.files[i][1], start, end)
        if arg is None:
            continue
        cls, funcs = index.enclosing(i, start)
        caller = _Def(i, cls, funcs[-1] if funcs else "", "")
        found = _field_read(index, tree, caller, arg, field, 1, seen)
        if found is not None:
            return found
    return None


def _field_read(index: ReaderIndex, tree: _Tree, caller: _Def, arg: _Arg, field: str,
                depth: int, seen: set[tuple[str, str | None, str]]) -> Reader | None:
    """Follow a config handed whole as ``arg`` into its callee's reads of ``field``."""
    key = (arg.callee, arg.keyword, str(arg.position))
    if depth > HANDOFF_DEPTH or key in seen:
        return None
    seen.add(key)
    for target, param in _targets(tree, caller, arg, arg.callee.rsplit(".", 1)[-1]):
        start = index.files[target.file][1].find(target.text)
        reads = index.parameter_field_reads(target.file, (start, start + len(target.text)),
                                            param, field)
        if reads:
            found = _default_path(index, target.file, param, reads)
            return replace(found, handed=(f"{arg.callee}({param}=)", *found.handed))
        value = re.compile(rf"(?<![\w.]){re.escape(param)}\b(?![\w.(\[])")
        for nxt in _passes(target, value):
            found = _field_read(index, tree, target, nxt, field, depth + 1, seen)
            if found is not None:
                return replace(found, handed=(f"{arg.callee}({param}=)", *found.handed))
    return None


def _default_path(index: ReaderIndex, file: int, param: str, reads: list[Reader]) -> Reader:
    """The first of ``reads`` outside the body of an ``if``/``elif`` that tests a field of the
    handed config (``if quant_config.use_fp8_w8a8: return asm_moe_tkw1(...)``): that branch
    serves only configs with the flag, the read on the path the others take comes first
    (the first read when every one is in such a branch)."""
    tree = parsed(index, index.files[file][1])
    branches = [(node.body[0].lineno, node.body[-1].end_lineno or node.body[-1].lineno)
                for node in (walk(tree) if tree is not None else ())
                if isinstance(node, ast.If) and any(
                    isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
                    and n.value.id == param for n in walk(node.test))]
    return min(reads, key=lambda r: any(a <= r.line <= b for a, b in branches))


@dataclass(frozen=True)
class Kept:
    """A constructor's store of a handed argument: ``self.<attr> = <param>`` at ``line`` of
    file ``file`` in ``cls.__init__``, read after load by ``reader`` (None: no read found);
    ``path``: the calls that handed the value on to it."""

    file: int
    line: int
    col: int
    cls: str
    attr: str
    param: str
    annotation: str  # the parameter's annotation, "" when none
    reader: Reader | None
    path: tuple[str, ...]


_KEEPS = r"^([ \t]+)self\.(\w+)[ \t]*(?::[^=\n]*)?=[ \t]*{}[ \t]*(?:#[^\n]*)?$"


def _follow(index: ReaderIndex, tree: _Tree, caller: _Def, arg: _Arg, depth: int,
            seen: set[tuple[str, str | None, str]]) -> Reader | None:
    """Follow ``arg`` of a call made in ``caller`` into the callee (module docstring)."""
    for kept in _kept(index, tree, caller, arg, depth, seen):
        if kept.reader is not None:
            return replace(kept.reader, handed=kept.path)
    return None


def handed_tree(index: ReaderIndex) -> None:
    """Build the class and function table of the tree once (before forked workers share it)."""
    index.memo("handed-tree", lambda: _Tree(index))


def kept_stores(index: ReaderIndex, caller: str, file: int, value: str) -> Iterator[Kept]:
    """The constructors (followed as :func:`handed_reader` does) that keep ``value`` (an
    expression matched whole) where ``caller``, the text of a function of file ``file``, passes
    it to a call; their ``reader`` is not looked up (None)."""
    tree = index.memo("handed-tree", lambda: _Tree(index))
    here = _Def(file, None, "", caller)
    pattern = re.compile(rf"(?<![\w.]){re.escape(value)}\b(?![\w.(\[])")
    seen: set[tuple[str, str | None, str]] = set()
    for arg in _passes(here, pattern):
        yield from _kept(index, tree, here, arg, 1, seen, read=False)


def _kept(index: ReaderIndex, tree: _Tree, caller: _Def, arg: _Arg, depth: int,
          seen: set[tuple[str, str | None, str]], read: bool = True) -> Iterator[Kept]:
    """Each constructor store ``arg`` reaches (module docstring), with its reader when
    ``read``; the path ends at a constructor that keeps the argument."""
    name = arg.callee.rsplit(".", 1)[-1]
    key = (arg.callee, arg.keyword, str(arg.position))
    if depth > HANDOFF_DEPTH or key in seen:
        return
    seen.add(key)
    for target, param in _targets(tree, caller, arg, name):
        if target.name == "__init__" and target.cls:
            kept = re.search(_KEEPS.format(re.escape(param)), target.text, re.M)
            if kept:
                found = index.reader(target.cls, "self", kept.group(2),
                                     index.files[target.file][0]) if read else None
                built = "" if name == target.cls else f" as {target.cls}"
                text = index.files[target.file][1]
                at = text.find(target.text) + kept.start(2) - 5
                note = re.search(rf"(?<![\w.]){re.escape(param)}[ \t]*:[ \t]*([^=,)\n]+)",
                                 target.text)
                yield Kept(target.file, text.count("\n", 0, at) + 1, len(kept.group(1)),
                           target.cls, kept.group(2), param,
                           note.group(1).strip() if note else "", found,
                           (f"{arg.callee}({param}=){built}",))
                continue
        value = re.compile(rf"(?<![\w.]){re.escape(param)}\b(?![\w.(\[])")
        for nxt in _passes(target, value):
            for kept in _kept(index, tree, target, nxt, depth + 1, seen, read):
                yield replace(kept, path=(f"{arg.callee}({param}=)", *kept.path))


def _targets(tree: _Tree, caller: _Def, arg: _Arg, name: str) -> Iterator[tuple[_Def, str]]:
    """(callee definition, the parameter ``arg`` binds) for each callee ``arg`` may reach."""
    def bound(func: _Def) -> str | None:
        params = _params(func.text)
        if arg.keyword is not None:
            return arg.keyword if arg.keyword in params else None
        return params[arg.position] if arg.position < len(params) else None

    candidates: list[_Def] = []
    if name in tree.classes:
        init = tree.method(name, "__init__")
        candidates = [init] if init else []
    elif arg.callee.startswith("self.") and caller.cls:
        candidates = [d for c in sorted(tree.index.family(caller.cls))
                      if (d := tree.method(c, name))][:1]
    elif name in tree.functions:
        candidates = list(tree.function(name))
    elif arg.keyword is not None:  # a callable the caller does not name: a class it names
        for word in dict.fromkeys(_CLASS_WORD.findall(caller.text)):
            if word in tree.classes and word != caller.cls:
                init = tree.method(word, "__init__")
                if init is not None:
                    candidates.append(init)
    for func in candidates:
        param = bound(func)
        if param is not None:
            yield func, param
