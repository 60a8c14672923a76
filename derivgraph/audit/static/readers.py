"""Evidence per finding: who reads a stored tensor after loading, and which weight it holds.

A derived tensor is a problem only when code that runs after loading reads it: a kernel call,
a ``forward``/``apply`` method, or a captured callable. :class:`ReaderIndex` finds, in the text
of the scanned tree, the reads of each finding's attribute outside post-load code (the reach the
scan computed, plus constructors and weight loaders) and keeps the first one whose receiver fits
the store:

* ``self.x`` (or ``self.a.b.x``) stored by class ``C``: a read through ``self`` in ``C``, an
  ancestor or a subclass, with the same last owner component (``._w2.scale``); a read in a
  ``@property`` is followed to the reads of that property (up to :data:`PROPERTY_DEPTH`), which
  must again be reads through ``self`` in that family; a read through another receiver anywhere
  counts when the name is not a generic one (``weight``, ``scale``...).
* ``layer.x`` or a local holder that escapes (returned, stored, passed on): a read anywhere.
* a local object built in the function that never escapes (``ark = ARK(...)``; ``ark.scales =
  ...``): a store onto a throwaway object, never read.

:func:`derives_from` names the weight a stored value is computed from (one hop through a local
assignment); :func:`fold_can_rerun` tells whether an in-place fold can run twice on one load
path (its function is also called from code that runs after loading).
"""

from __future__ import annotations

import bisect
import dataclasses
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from derivgraph._enum import StrEnum
from derivgraph.audit.static import lazy_accessor, named_modules, read_sites
from derivgraph.audit.static.alternation import words_pattern
from derivgraph.audit.static.def_text import def_end
from derivgraph.audit.static.selection import NO_CONSTRUCTION, Construction
from derivgraph.audit.static.source_tree import TextOffsets, parsed

__all__ = [
    "NOT_READERS",
    "PROPERTY_DEPTH",
    "Reader",
    "ReaderIndex",
    "ReaderKind",
    "derives_from",
    "escapes",
]

_T = TypeVar("_T")

PROPERTY_DEPTH = 3
"""How many ``@property`` indirections a read is followed through."""

GENERIC_NAMES = frozenset({
    "weight", "bias", "scale", "scales", "data", "qweight", "weight_scale", "input_scale",
    "output_scale", "zeros", "qzeros", "g_idx", "config", "handler",
    "locks", "workspace", "shape", "dtype", "device", "weights",
})
"""Attribute names read through so many receivers that only a same-family read counts."""

NOT_READERS = re.compile(
    r"^(?:__init__|__post_init__|create_weights|_?load_weights?|weight_loader\w*|\w*_weight_loader"
    r"|process_weights_after_loading|post_load_weights|__repr__|extra_repr|__getstate__"
    r"|__setstate__|__del__|state_dict|load_state_dict)$")
"""Methods whose reads happen before loading or do not feed a kernel."""

_KERNEL_CALL = re.compile(r"\b(?:torch\.ops\.|ops\.|kernel|_C\.|triton|flashinfer|aiter|cutlass"
                          r"|gemm|mm\(|matmul|bmm|linear|fused)", re.I)
_DEF_ONLY = re.compile(r"def[ \t]+(\w+)")
_CLASS_ONLY = re.compile(r"class[ \t]+(\w+)")
_KERNEL_WRAPPER = re.compile(r"\bwrapper\.run\($")
"""A kernel wrapper's launch (``wrapper.run``, ``prefill_wrapper.run``): its arguments are the
kernel's."""
_MATMUL = re.compile(r"^[^@#]*[\w)\]][ \t]*@[ \t]*[\w(]")
"""A matrix product by the ``@`` operator on the line (``x @ self.w13_weight.T``): a GEMM."""
_WEIGHT_WORD = re.compile(
    r"\b(?:[A-Za-z_]\w*\.)*(\w*(?:weight|scale|bias|qzeros|g_idx|gamma|lm_head|embed"
    r"|alpha|w13|w2_|w1_|_w\d|kv_a|wkv|wq|wo_|gate|proj|norm|sink)\w*)")

_WEIGHT_PARAM = re.compile(r"^(?:w|w\d+|w13\w*|w2\w*|\w*weight\w*|\w*scale\w*|\w*bias\w*)$")
_META_NAME = re.compile(r"_(?:type|dtype|name|names|shape|size|dim|bits|mode|format|layout)$")


_ATTR_NAME = re.compile(r"\.([A-Za-z_]\w*)")
_GETATTR_NAME = re.compile(r"getattr\(\s*[\w.]+\s*,\s*[\"'](\w+)[\"']")
_WEAK_READ = re.compile(r"^assert\b|\bis (?:not )?None\b")
_META_READ = read_sites.META_READ
_NONE_TEST = read_sites.NONE_TEST
_CONDITION = read_sites.CONDITION
_GETTER = re.compile(r"return[ \t]+self\.\w+[ \t]*(?:#.*)?")
"""A getter's statement ``return self.x``: the value leaves for the caller."""
_WARM_UP = re.compile(r"warm|compile|autotune|profil|dummy", re.I)
"""A function that runs a kernel once to prepare it (warm-up, compile, autotune, profile):
its read ranks after a read on the serving path (``forward``, ``apply``, ``run``)."""
"""A read that only checks presence (an ``assert``, an ``is None`` test): a later read of the
same builder is quoted instead."""
_KEYWORD_READ = re.compile(r"([A-Za-z_]\w*)[ \t]*=[ \t]*[\w.]+[ \t]*,?[ \t]*(?:#.*)?")
"""A line that is one keyword argument ``field=holder.attr,`` of a call spanning lines."""
_UNPACK_TARGETS = re.compile(r"[ \t]*[\w.]+(?:[ \t]*,[ \t]*[\w.]+)+[ \t]*,?[ \t]*=(?!=)")
"""A line whose targets are a tuple of dotted names: ``self.k, self.v = k, v``."""


class ReaderKind(StrEnum):
    """How code after loading reads the tensor."""

    KERNEL_CALL = "kernel-call"  # an argument of a kernel or op call
    FORWARD = "forward"  # read by forward/apply code (or a helper it calls)
    CAPTURED = "captured"  # a stored callable that captures it is called
    CONFIG = "config"  # read into a config of tensors (a builder annotated to return one)


@dataclass(frozen=True)
class Reader:
    """One read of a stored tensor in code that runs after loading."""

    file: str
    line: int
    function: str
    kind: ReaderKind
    text: str  # the reading line, stripped
    handed: tuple[str, ...] = ()  # the calls that hand the tensor on to the reading object
    # an accessor named because its consumer is not resolved: the classes that fit equally
    unresolved: tuple[str, ...] = ()
    # the unresolved classes are those the storing class binds itself (none reads the field)
    bound: bool = False

    def __str__(self) -> str:
        return f"{self.kind.value} {self.file}:{self.line} in {self.function}: {self.text}"


@dataclass(frozen=True)
class _Hit:
    file: int
    line: int
    cls: str | None
    funcs: tuple[str, ...]  # enclosing functions, outermost first
    receiver: str  # the chain before ``.name``: "self.quant_config._w2", "layer", ""
    text: str
    in_property: str | None  # the enclosing @property's name
    call: bool  # ``name(`` right after: a call of the attribute
    pos: int  # where the read starts in the file's text
    end: int  # just past the attribute name


_CODE_STOP = re.compile(r"[#\"'()\[\]{}\n;]")
_QUOTED_STOP = {'"': re.compile(r'[\\"]'), "'": re.compile(r"[\\']")}
"""The characters :meth:`_FileDefs.statement_start` acts on, outside and inside a string."""


class _FileDefs:
    """Where the functions and classes of one file start, for enclosing-scope lookups."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.rows: list[tuple[int, int, str, str, bool]] = []  # (pos, indent, kind, name, prop)
        # the ``def`` and ``class`` headers, by two searches with a literal start (one search
        # for either is several times slower); only a header at a line's start is kept, so
        # the two searches keep exactly the headers one ``(def|class)`` search keeps
        found = sorted([(m.start(), "def", m.group(1)) for m in _DEF_ONLY.finditer(text)]
                       + [(m.start(), "class", m.group(1)) for m in _CLASS_ONLY.finditer(text)])
        for at, kind, name in found:
            start = text.rfind("\n", 0, at) + 1
            head = text[start:at]
            if head.strip(" \t") not in ("", "async"):
                continue
            prev = text.rfind("\n", 0, max(start - 1, 0)) + 1
            decorator = text[prev:start].strip()
            prop = decorator.startswith("@") and decorator.endswith(("property", "property()"))
            self.rows.append((start, len(head.expandtabs()) - (5 if "async" in head else 0),
                              kind, name, prop))
        self.starts = [r[0] for r in self.rows]
        self._counted = (0, 0)  # (position, its line): reads come mostly in text order

    def line_of(self, pos: int) -> int:
        """The 0-based line of ``pos``."""
        at, line = self._counted
        if pos >= at:
            line += self.text.count("\n", at, pos)
        else:
            line = self.text.count("\n", 0, pos)
        self._counted = (pos, line)
        return line

    def enclosing(self, pos: int, indent: int) -> tuple[str | None, tuple[str, ...], str | None]:
        """(class, functions outermost first, enclosing property) around ``pos``."""
        funcs: list[str] = []
        cls: str | None = None
        prop: str | None = None
        k = bisect.bisect_right(self.starts, pos) - 1
        while k >= 0 and indent > 0:
            _, ind, kind, name, is_prop = self.rows[k]
            if ind < indent:
                if kind == "class":
                    cls = name if cls is None else cls
                    if ind == 0:
                        break
                else:
                    funcs.insert(0, name)
                    if is_prop and prop is None and len(funcs) == 1:
                        prop = name
                indent = ind
            k -= 1
        return cls, tuple(funcs), prop

    def statement_start(self, pos: int) -> int:
        """Where the logical statement holding ``pos`` starts (after its indent): scanned from
        the nearest ``def``/``class`` line before it, skipping strings, comments and bracketed
        continuation lines."""
        text = self.text
        k = bisect.bisect_right(self.starts, pos) - 1
        i = start = self.starts[k] if k >= 0 else 0
        depth, quote = 0, ""
        while i < pos:
            # jump to the next character that matters in this state (the others step by one)
            stop = (_QUOTED_STOP[quote[0]] if quote else _CODE_STOP).search(text, i, pos)
            if stop is None:
                break
            i = stop.start()
            c = text[i]
            if quote:
                if c == "\\":
                    i += 2
                    continue
                if text.startswith(quote, i):
                    i += len(quote) - 1
                    quote = ""
            elif c == "#":
                i = text.find("\n", i)
                if i < 0:
                    break
                continue
            elif c in "\"'":
                quote = text[i:i + 3] if text[i:i + 3] in ('"""', "'''") else c
                i += len(quote) - 1
            elif c in "([{":
                depth += 1
            elif c in ")]}":
                depth = max(depth - 1, 0)
            elif c in "\n;" and depth == 0 and text[i - 1] != "\\":
                start = i + 1
            i += 1
        while start < pos and text[start] in " \t":
            start += 1
        return start


def _scope(hit: _Hit, family: frozenset[str], at: int | None, same: bool,
           via_self: bool) -> tuple[int, int]:
    """How near a read is to the store: 0 in the storing class family and file, 1 in the
    family, 2 in the file, 3 elsewhere; then 0 in a method or function, 1 in a closure."""
    kin = same if via_self else hit.cls in family
    level = (0 if hit.file == at else 1) if kin else (2 if hit.file == at else 3)
    return level, int(len(hit.funcs) > 1)


class ReaderIndex:
    """The reads of a set of attribute names across the scanned tree (text only, no parse)."""

    def __init__(self, files: Sequence[tuple[str, str]],
                 post_load: Iterable[tuple[int, str | None, str]],
                 family: Callable[[str], frozenset[str]],
                 config_builders: frozenset[str] = frozenset()) -> None:
        self.files = files
        self.post_load = set(post_load)
        self.family = family
        # methods annotated to return a config or dataclass of tensors ("Class.method"): what
        # they read goes into the config they build, which kernels read after load
        self.config_builders = config_builders
        self._hits: dict[str, list[_Hit]] = {}
        self._defs: dict[int, _FileDefs] = {}
        self._file_index: dict[str, int] | None = None
        self._memo: dict[str, object] = {}
        self._where: dict[str, list[int]] | None = None

    def memo(self, key: str, make: Callable[[], _T]) -> _T:
        """``make()``, computed once per index (a derived table some queries share)."""
        if key not in self._memo:
            self._memo[key] = make()
        return self._memo[key]  # type: ignore[return-value]

    # ---- the text search --------------------------------------------------------------------

    def prefetch(self, names: Iterable[str]) -> None:
        """Find every read of ``names`` in one pass over the tree."""
        todo = sorted({n for n in names if n and n not in self._hits and n.isidentifier()})
        if not todo:
            return
        for n in todo:
            self._hits[n] = []
        alt = words_pattern(todo)
        dotted = re.compile(rf"\.({alt})\b")
        by_name = re.compile(rf"getattr\(\s*([\w.]+)\s*,\s*[\"']({alt})[\"']")
        where = self._word_files()
        for i in sorted({i for n in todo for i in where.get(n, ())}):
            text = self.files[i][1]
            for m in dotted.finditer(text):
                hit = self._hit(i, text, m, m.group(1), None)
                if hit is not None:
                    self._hits[m.group(1)].append(hit)
            if "getattr(" in text:
                for m in by_name.finditer(text):
                    hit = self._hit(i, text, m, m.group(2), m.group(1))
                    if hit is not None:
                        self._hits[m.group(2)].append(hit)

    def files_naming(self, name: str) -> list[int]:
        """The indices of the files whose text has ``.name`` (or ``getattr(x, "name")``)."""
        return self._word_files().get(name, [])

    def enclosing(self, i: int, pos: int) -> tuple[str | None, tuple[str, ...]]:
        """The class and the functions (outermost first) around ``pos`` in file ``i``."""
        defs = self._defs.get(i)
        if defs is None:
            defs = self._defs[i] = _FileDefs(self.files[i][1])
        text = self.files[i][1]
        head = text[text.rfind("\n", 0, pos) + 1:pos]
        cls, funcs, _ = defs.enclosing(pos, len(head) - len(head.lstrip(" \t")) + 1)
        return cls, funcs

    def _word_files(self) -> dict[str, list[int]]:
        """Attribute name -> the files that hold ``.name`` or ``getattr(x, "name")``: one
        pass over the tree, so that each later search reads only the files naming it."""
        if self._where is None:
            self._where = {}
            for i, (_, text) in enumerate(self.files):
                words = set(_ATTR_NAME.findall(text))
                if "getattr(" in text:
                    words.update(_GETATTR_NAME.findall(text))
                for w in words:
                    self._where.setdefault(w, []).append(i)
        return self._where

    def _hit(self, i: int, text: str, m: re.Match[str], name: str,
             by_name: str | None) -> _Hit | None:
        name_end = m.end()
        line_start = text.rfind("\n", 0, m.start()) + 1
        line_end = text.find("\n", name_end)
        line = text[line_start:line_end if line_end >= 0 else len(text)]
        rest = text[name_end:line_end if line_end >= 0 else len(text)].lstrip(" \t")
        if by_name is None:
            if (rest.startswith("=") and not rest.startswith("==")) or (
                    len(rest) > 1 and rest[1] == "=" and rest[0] in "+-*/@%&|^"):
                return None  # a store or an augmented store
            targets = _UNPACK_TARGETS.match(line) if rest.startswith(",") else None
            if targets is not None and name_end - line_start < targets.end():
                return None  # a target of a tuple unpack ``self.a, self.b = a, b``
            head = text[line_start:m.start()]
            if rest.startswith(":") and not head.strip(" \t").replace("self", "").strip("."):
                return None  # an annotated store ``self.x: T = ...``
            if head.lstrip().startswith("del "):
                return None
            k = m.start()
            while k > line_start and (text[k - 1].isalnum() or text[k - 1] in "_."):
                k -= 1
            receiver = text[k:m.start()]
        else:
            receiver = by_name
        stripped = line.lstrip(" \t")
        if stripped.startswith("#"):
            return None
        defs = self._defs.get(i)
        if defs is None:
            defs = self._defs[i] = _FileDefs(text)
        indent = len(line) - len(stripped)
        cls, funcs, prop = defs.enclosing(m.start(), indent + 1)
        return _Hit(i, defs.line_of(m.start()) + 1, cls, funcs, receiver, stripped,
                    prop, rest.startswith("("), m.start(), name_end)

    # ---- queries ----------------------------------------------------------------------------

    def _after_load(self, hit: _Hit) -> bool:
        if not hit.funcs:
            return False
        if any(NOT_READERS.match(f) for f in hit.funcs):
            return False
        return not any((hit.file, hit.cls, f) in self.post_load for f in hit.funcs)

    def _reader(self, hit: _Hit, alias: bool = True) -> Reader:
        """The :class:`Reader` of ``hit``: a kernel call when the line, a call whose brackets
        hold the read (over several lines), or the use of the local the read's statement
        assigns (``scales = [..., self.w2_scale]``, ``buf = self.x``) hands it to a kernel
        (:func:`.read_sites.kernel_callee`). The text stays the line (consumers parse it as a
        quote of the source), so the call is not quoted; a plain alias (``buf = self.x`` alone
        on its line) is named at its first use handed to a call
        (:func:`.read_sites.alias_handoff`), the line that consumes the value, the alias
        statement kept as what handed it on (not with
        ``alias`` False: a config builder's read, whose statement names the config's field)."""
        func = ".".join(x for x in (hit.cls, *hit.funcs) if x)
        text = self.files[hit.file][1]
        if hit.call:
            return Reader(self.files[hit.file][0], hit.line, func, ReaderKind.CAPTURED,
                          hit.text[:160])
        pos = hit.pos - len(hit.receiver) if text[hit.pos] == "." else hit.pos  # or getattr(
        callee = "" if _KERNEL_CALL.search(hit.text) else read_sites.kernel_callee(
            text, self._defs[hit.file], pos, _is_kernel)
        kind = ReaderKind.KERNEL_CALL if callee or _KERNEL_CALL.search(hit.text) \
            or _MATMUL.search(hit.text) else ReaderKind.FORWARD
        use = read_sites.alias_handoff(text, self._defs[hit.file], pos, hit.end) \
            if alias and text[hit.pos] == "." else None
        if use is None:
            lazy = self._returned_consumer(hit) if alias else None
            if lazy is not None:
                return lazy
            return Reader(self.files[hit.file][0], hit.line, func, kind, hit.text[:160])
        # ``buf = self.x`` then ``mm(a, buf["w"])``: the use reads it, through the alias
        start = text.rfind("\n", 0, use) + 1
        end = text.find("\n", use)
        return Reader(self.files[hit.file][0], self._defs[hit.file].line_of(use) + 1, func, kind,
                      text[start:end if end >= 0 else len(text)].strip()[:160],
                      handed=(f"`{hit.text[:80]}` (line {hit.line})",))

    def _returned_consumer(self, hit: _Hit) -> Reader | None:
        """The caller's use that consumes the value when ``hit`` is a lazy accessor's cache
        lookup (a method of ``hit.cls`` returning the local the read binds,
        :func:`.lazy_accessor.returned_consumer`), the lookup and the calls kept as what handed
        it on; None otherwise."""
        if hit.cls is None or len(hit.funcs) != 1:
            return None
        display, text = self.files[hit.file]
        tree = parsed(self, text)
        at = self.memo(f"offsets {hit.file}", lambda: TextOffsets(text))
        found = lazy_accessor.returned_consumer(tree, hit.cls, hit.funcs[0], hit.line,
                                                at.lines) if tree is not None else None
        if found is None:
            return None
        defs = self._defs[hit.file]
        line = at.lines[found.line - 1]
        pos = at.offset(found.line, found.col)
        kind = ReaderKind.KERNEL_CALL if read_sites.kernel_callee(text, defs, pos, _is_kernel) \
            or _KERNEL_CALL.search(line) else ReaderKind.FORWARD
        handed = (f"`{hit.text[:80]}` (line {hit.line})",
                  *(f"`{quote}` (line {n})" for n, quote in found.via))
        return Reader(display, found.line, f"{hit.cls}.{found.function}", kind,
                      line.strip()[:160], handed=handed)

    def reader(self, cls: str | None, owner: str, attr: str,
               file: str | None = None) -> Reader | None:
        """The read after loading of ``owner.attr`` stored by code of class ``cls`` that best
        shows who consumes it (:meth:`_best`); with ``file`` (where the store is), reads in that
        file rank before reads elsewhere (two files may define classes of one name: ``amd/`` and
        ``nvidia/``)."""
        family = self.family(cls) if cls else frozenset()
        return self._find(family, owner, attr, 0, at=self._at(file or ""))

    def _at(self, display: str) -> int | None:
        if self._file_index is None:
            self._file_index = {display: i for i, (display, _) in enumerate(self.files)}
        return self._file_index.get(display)

    def file_at(self, display: str) -> int | None:
        """The index of the scanned file shown as ``display`` (None when not scanned)."""
        return self._at(display)

    def text(self, display: str) -> str:
        """The text of the scanned file shown as ``display`` ("" when not scanned)."""
        at = self._at(display)
        return "" if at is None else self.files[at][1]

    def _find(self, family: frozenset[str], owner: str, attr: str, depth: int,
              seen: frozenset[str] = frozenset(), at: int | None = None) -> Reader | None:
        self.prefetch([attr])
        parts = owner.split(".") if owner else []
        via_self = bool(parts) and parts[0] == "self"
        last = parts[-1] if len(parts) > 1 else None
        outside_ok = not via_self or (depth == 0 and last is None
                                      and attr not in GENERIC_NAMES)
        props: set[str] = set()
        ranked: list[tuple[tuple[int, int], int, _Hit]] = []
        built: Reader | None = None  # a read by a config builder of this class (last resort)
        for n, hit in enumerate(self._hits.get(attr, ())):
            recv = hit.receiver.split(".")
            if last is not None and recv[-1] != last:
                continue
            if hit.in_property is not None:
                if not NOT_READERS.match(hit.in_property):
                    props.add(hit.in_property)
                continue
            if not self._after_load(hit):
                if via_self and (built is None or _WEAK_READ.search(built.text)) \
                        and self._builds_config(hit, family):
                    built = dataclasses.replace(self._reader(hit, alias=False),
                                                kind=ReaderKind.CONFIG)
                continue
            same = hit.cls in family and recv[0] == "self"
            if not (same or not via_self or (outside_ok and recv[0] != "self")):
                continue
            ranked.append((_scope(hit, family, at, same, via_self), n, hit))
        if ranked:
            if not via_self and at is not None and min(r[0][0] for r in ranked) == 3:
                # an outside holder read only elsewhere: the module the store names serves it
                named = named_modules.named_files(self, at, (r[2].file for r in ranked))
                ranked = [((2, r[0][1]) if r[2].file in named else r[0], *r[1:])
                          for r in ranked]
            best = self._best(ranked)
            field = self._object_field(best)
            return self._reader(best) if field is None else dataclasses.replace(
                self._reader(field[0]), handed=(field[1],))
        if depth >= PROPERTY_DEPTH:
            return built
        for prop in sorted(props - seen):
            found = self._find(family, "self" if via_self else "", prop, depth + 1,
                               seen | props, at)
            if found is not None:
                return found
        return built

    def _object_field(self, hit: _Hit) -> tuple[_Hit, str] | None:
        """Where an object built with the read reads it back: the read is a keyword argument
        of a class's construction (``AiterMetadata(..., k_scale=self.k_scale)``, a per-step
        metadata object), so the value is consumed where code of the same file reads that
        field through another receiver after load (``attn_metadata.k_scale[name]``), the first
        such read that is not a check, with the class built; None when the read is no such
        argument or no such read exists."""
        m = _KEYWORD_READ.fullmatch(hit.text)
        if m is None or hit.receiver == "":
            return None
        calls = read_sites.enclosing_calls(self.files[hit.file][1], self._defs[hit.file],
                                           hit.pos - len(hit.receiver))
        if not calls or not calls[0].rsplit(".", 1)[-1][:1].isupper():
            return None
        field = m.group(1)
        self.prefetch([field])
        use = next((h for h in self._hits.get(field, ()) if h.file == hit.file
                    and h.receiver and h.receiver.split(".")[0] != "self"
                    and h.in_property is None and not h.call and self._after_load(h)
                    and not self._weak(h)), None)
        return None if use is None else (use, calls[0])

    def _best(self, ranked: list[tuple[tuple[int, int], int, _Hit]]) -> _Hit:
        """The read that shows who consumes the value: a getter no caller of its class consumes
        last (:meth:`_bare_getter`), then the nearest to the store (the storing
        class family, then its file, then anywhere; a method before a closure nested in one;
        the serving path before a warm-up or compile function, :func:`_warm_up`), and among
        those the first that passes the value on; a presence or metadata check
        (:meth:`_weak`) only when no other read exists."""
        ranked.sort(key=lambda r: (self._bare_getter(r[2]), r[0], _warm_up(r[2]), r[1]))
        return next((hit for _, _, hit in ranked if not self._weak(hit)), ranked[0][2])

    def _bare_getter(self, hit: _Hit) -> bool:
        """Whether the read is a getter's ``return self.x`` whose callers in its class hand
        the value to no call (:meth:`_returned_consumer` finds none): it only passes the value
        out of the class, so a read that consumes it elsewhere ranks first."""
        return hit.receiver == "self" and _GETTER.fullmatch(hit.text) is not None \
            and self._returned_consumer(hit) is None

    def _weak(self, hit: _Hit) -> bool:
        """A read that only checks or updates the value: its metadata (``.device``,
        ``.shape``...), a test for ``None``, any read in an ``assert`` or the condition of an
        ``if``/``while``, or the right side of a store back into the same attribute."""
        text = self.files[hit.file][1]
        if _META_READ.match(text, hit.end) or _NONE_TEST.match(text, hit.end):
            return True
        if not hit.call and text[hit.pos] == ".":  # ``x = holder.attr``: judged by x's uses
            uses = read_sites.alias_uses(text, self._defs[hit.file],
                                         hit.pos - len(hit.receiver), hit.end)
            if uses and all(read_sites.weak_use(text, self._defs[hit.file], *u) for u in uses):
                return True
        start = self._defs[hit.file].statement_start(hit.pos)
        if _CONDITION.match(text, start):
            return True
        # ``self.x = self.x / s``: the attribute recomputed from itself, not consumed
        dotted = hit.receiver and text[hit.pos] == "."
        chain = f"{hit.receiver}{text[hit.pos:hit.end]}" if dotted else ""
        return bool(chain) and start < hit.pos and re.match(
            rf"{re.escape(chain)}[ \t]*(?:[-+*/@%&|^]|//)?=(?!=)", text[start:hit.pos]) is not None

    def accessor_read(self, cls: str, holder: str, field: str,
                      tied: frozenset[str] | None = None,
                      default: Construction = NO_CONSTRUCTION) -> Reader | None:
        """The read of ``self.<holder>.<field>`` by code of class ``cls`` that runs after
        loading (a check only when nothing else); a read in an accessor property's body
        (``return self.quant_config.w1_scale``) is followed to the call that consumes it
        (:meth:`consumer_read`, among the classes ``tied`` to the config's construction when
        given, the one that best reads the ``default`` construction first), and kept only when
        no such call exists."""
        self.prefetch([field])
        hits = [h for h in self._hits.get(field, ()) if h.cls == cls
                and h.receiver == f"self.{holder}" and self._after_load(h)]
        if not hits:
            return None
        strong = [h for h in hits if not self._weak(h)] or hits
        hit = next((h for h in strong if not _warm_up(h)), strong[0])
        if hit.in_property is None:
            return self._reader(hit)
        ambiguous: list[str] = []
        found = self.consumer_read(cls, ((f"self.{holder}", field), ("self", hit.in_property)),
                                   tied=tied, default=default, holder=holder,
                                   unresolved=ambiguous)
        if found is not None:
            return found
        if not ambiguous and default.bound:  # none of the classes bound for it reads it
            return dataclasses.replace(self._reader(hit), bound=True, unresolved=tuple(
                sorted(tied or ()) or ["a binding not followed"]))
        return dataclasses.replace(self._reader(hit), unresolved=tuple(ambiguous))

    def self_reads(self, classes: frozenset[str], attr: str) -> list[tuple[int, int, int]]:
        """``(file, start, end)`` of each read of ``self.<attr>`` by a method of ``classes``
        that runs after loading, outside properties and checks, in scan order: where
        ``start:end`` spans ``self.<attr>``."""
        self.prefetch([attr])
        return [(h.file, h.pos - len(h.receiver), h.end) for h in self._hits.get(attr, ())
                if h.cls in classes and h.receiver == "self" and h.in_property is None
                and self._after_load(h) and not self._weak(h)]

    def parameter_field_reads(self, file: int, span: tuple[int, int], param: str,
                              field: str) -> list[Reader]:
        """The reads of ``<param>.<field>`` in ``span`` of file ``file`` (a function whose
        parameter ``param`` is handed an object) by code that runs after loading, checks left
        out, in text order."""
        self.prefetch([field])
        return [self._reader(h) for h in self._hits.get(field, ())
                if h.file == file and span[0] <= h.pos < span[1] and h.receiver == param
                and self._after_load(h) and not self._weak(h)]

    def accessors(self, classes: frozenset[str], receiver: str, name: str) -> list[str]:
        """The properties of ``classes`` whose body reads ``<receiver>.<name>``
        (``return self._w2.bias``), in scan order."""
        self.prefetch([name])
        return list(dict.fromkeys(h.in_property for h in self._hits.get(name, ())
                                  if h.in_property and h.cls in classes
                                  and h.receiver == receiver))

    def parameter_read(self, display: str, cls: str, name: str) -> Reader | None:
        """The first use handed to a call of a parameter ``name`` of a method of class ``cls``
        in file ``display`` that runs after loading (``def apply_weights(self, layer, x,
        bias=None)``: ``kernel(..., bias=bias)``): its caller hands it the layer's ``name``, so
        that call reads what a post-load step of the class stored there. Checks (``if bias is
        not None``) do not count; None when no such method or use."""
        i = self._at(display)
        head = re.search(rf"^class[ \t]+{re.escape(cls)}\b", self.files[i][1], re.M) \
            if i is not None else None
        if i is None or head is None:
            return None
        text = self.files[i][1]
        end = re.compile(r"^(?:class|def|@)", re.M).search(text, head.end())
        body_end = end.start() if end else len(text)
        param = re.compile(rf"[(,][ \t\n]*{re.escape(name)}[ \t]*[:=,)]")
        for d in re.finditer(r"^([ \t]+)(?:async[ \t]+)?def[ \t]+(\w+)[ \t]*\(", text[:body_end],
                             re.M):
            if d.start() < head.end() or NOT_READERS.match(d.group(2)) \
                    or (i, cls, d.group(2)) in self.post_load:
                continue
            stop = def_end(text, d.start())
            header_end = text.find(":\n", d.end())
            if not param.search(text, d.end() - 1, header_end):
                continue
            for use in re.finditer(rf"(?<![\w.]){re.escape(name)}(?![\w(])", text[:stop]):
                if use.start() <= header_end:
                    continue
                line = text[text.rfind("\n", 0, use.start()) + 1:text.find("\n", use.start())]
                if _CONDITION.match(line.strip()) or _NONE_TEST.match(text, use.end()):
                    continue
                self.enclosing(i, use.start())  # builds the file's definition table
                calls = read_sites.enclosing_calls(text, self._defs[i], use.start())
                if not calls:
                    continue
                kind = ReaderKind.KERNEL_CALL if any(map(_is_kernel, calls)) \
                    else ReaderKind.FORWARD
                return Reader(display, self._defs[i].line_of(use.start()) + 1,
                              f"{cls}.{d.group(2)}", kind, line.strip()[:160])
        return None

    def consumer_read(self, cls: str, reads: Iterable[tuple[str, str]], depth: int = 0,
                      tied: frozenset[str] | None = None,
                      default: Construction = NO_CONSTRUCTION, holder: str = "",
                      unresolved: list[str] | None = None) -> Reader | None:
        """The read after load, by a class of ``cls``'s family and outside accessor
        properties, of ``<receiver>.<name>`` for a ``(receiver, name)`` of ``reads`` (an
        accessor property read through ``self``, or the chain it returns) that hands the value
        to a call: the argument of a call before any other read, and among those the read of
        the class with the largest family (the consumer most subclasses inherit; ties: scan
        order). With ``tied`` (the classes the module building the config selects or imports,
        :func:`.selection.construction_classes`), only reads by those classes count: a
        consumer the config never reaches is not named. A property reading one of them is
        followed to its own reads (up to :data:`PROPERTY_DEPTH`). Among the tied classes the
        one built for the config's ``default`` construction comes first (:meth:`coverage`),
        then, among classes that fit it equally, the one whose backend the selector tries
        first (``default.order``, :func:`.selection.backend_order`), then a serving read before
        a warm-up or compile one (:func:`_warm_up`); when several tied classes fit it equally
        and no order ranks them (or no construction is known) the consumer is not resolved:
        None, and their names are added to ``unresolved``. Presence
        and metadata checks never count. The candidates are memoized (every config of one type
        asks the same question); the tie only filters them."""
        pairs = dict.fromkeys(reads)
        ranked, nested = self.memo(f"consumer {cls} {depth} {sorted(pairs)}",
                                   lambda: self._consumer_hits(cls, pairs))
        kept = [r for r in ranked if tied is None or r[1].cls in tied]
        if kept:
            score = {c: self.coverage(c, holder, default) for c in {r[1].cls for r in kept}}
            best = [c for c in sorted(score, key=str) if score[c] == max(score.values())]
            first = {c: i for i, c in enumerate(default.order)}  # the selector's order
            if tied is not None and len(best) > 1 and not (
                    (max(score.values()) > 0 or default.bound) and first.keys() & set(best)):
                if unresolved is not None:
                    unresolved.extend(best)
                return None
            hit = min(kept, key=lambda r: (-score[r[1].cls], first.get(r[1].cls, len(first)),
                                           _warm_up(r[1]), r[0]))[1]
            found = self._reader(hit)
            return dataclasses.replace(found, kind=ReaderKind.KERNEL_CALL) \
                if _is_kernel(self._callee(hit)) else found
        if depth >= PROPERTY_DEPTH or not nested:
            return None
        return self.consumer_read(cls, (("self", p) for p in sorted(nested)), depth + 1, tied,
                                  default, holder, unresolved)

    def coverage(self, cls: str | None, holder: str, default: Construction) -> int:
        """How well class ``cls`` fits a config's default construction: the fields it fills
        that ``cls`` reads after load through ``self`` or ``self.<holder>`` (outside
        properties and checks), less the fields only the construction's other branches fill
        that it reads (memoized)."""
        if not default.filled or cls is None:
            return 0

        def count() -> int:
            def reads(field: str) -> bool:
                return cls in self._field_readers(field, holder)

            return sum(map(reads, default.filled)) - sum(map(reads, default.foreign))

        return self.memo(f"coverage {cls} {holder} {sorted(default.filled)} "
                         f"{sorted(default.foreign)}", count)

    def _field_readers(self, field: str, holder: str) -> frozenset[str | None]:
        """The classes that read ``field`` after load through ``self`` or ``self.<holder>``,
        outside properties and checks (memoized: one pass over the field's reads)."""
        def find() -> frozenset[str | None]:
            self.prefetch([field])
            receivers = ("self", f"self.{holder}")
            return frozenset(h.cls for h in self._hits.get(field, ())
                             if h.receiver in receivers and h.in_property is None
                             and self._after_load(h) and not self._weak(h))

        return self.memo(f"field readers {field} {holder}", find)

    def _consumer_hits(self, cls: str, pairs: dict[tuple[str, str], None]
                       ) -> tuple[list[tuple[tuple[bool, int, int], _Hit]], list[str]]:
        """The ranked candidate reads of :meth:`consumer_read` (every class of the family)
        and the properties that read one of ``pairs`` (followed next), in sorted order."""
        family = self.family(cls)
        self.prefetch([name for _, name in pairs])
        ranked: list[tuple[tuple[bool, int, int], _Hit]] = []
        nested: set[str] = set()
        for receiver, name in pairs:
            for n, hit in enumerate(self._hits.get(name, ())):
                if hit.cls not in family or hit.receiver != receiver or not self._after_load(hit):
                    continue
                if hit.in_property is not None:
                    if ("self", hit.in_property) not in pairs:
                        nested.add(hit.in_property)
                    continue
                if not self._weak(hit):
                    ranked.append(((not self._argument(hit), -len(self.family(hit.cls)), n), hit))
        return ranked, sorted(nested)

    def _argument(self, hit: _Hit) -> bool:
        """Whether the read sits inside the brackets of a call (an argument handed on)."""
        return bool(self._callee(hit))

    def _callee(self, hit: _Hit) -> str:
        """The dotted name of the innermost call whose brackets hold the read, from the start
        of its statement ("" when none; tuples and lists inside a call are looked through)."""
        calls = read_sites.enclosing_calls(self.files[hit.file][1], self._defs[hit.file],
                                           hit.pos - len(hit.receiver))
        return calls[0] if calls else ""

    def _builds_config(self, hit: _Hit, family: frozenset[str]) -> bool:
        """A read of ``self.x`` by a method of the same class family that builds a config of
        tensors (annotated ``-> QuantConfig``, here or on an ancestor): the config carries the
        value to the kernels that read it after load."""
        if hit.cls not in family or not hit.receiver.startswith("self") or not hit.funcs:
            return False
        method = hit.funcs[0]
        return any(f"{c}.{method}" in self.config_builders for c in self.family(hit.cls))

    def called_after_load(self, func: str) -> Reader | None:
        """A call of ``func`` from code that runs after loading (a fold that can rerun)."""
        self.prefetch([func])
        for hit in self._hits.get(func, ()):
            if hit.call and self._after_load(hit):
                return dataclasses.replace(self._reader(hit), kind=ReaderKind.FORWARD)
        return None


    def only_post_load(self, func: str, depth: int = 3) -> bool:
        """Whether every call of ``func`` in the tree (any receiver) sits in post-load code, or
        in a method only post-load code calls (up to ``depth`` hops), and one call exists: code
        that runs while the weights are prepared, before any graph is captured."""
        self.prefetch([func])
        calls = [h for h in self._hits.get(func, ()) if h.call]
        if not calls:
            return False
        for hit in calls:
            if not hit.funcs:
                return False
            if any((hit.file, hit.cls, f) in self.post_load for f in hit.funcs):
                continue
            if depth == 0 or hit.funcs[0] == func or not self.only_post_load(hit.funcs[0],
                                                                             depth - 1):
                return False
        return True

    def refreshed_after_load(self, cls: str | None, owner: str, attr: str) -> Reader | None:
        """A ``<owner>.<attr>.copy_(...)`` in code that runs after loading, through the same
        receiver (``self`` in the storing class's family): the copy is refreshed where it is
        used, so it follows its source whatever reloaded it."""
        self.prefetch([attr])
        family = self.family(cls) if cls else frozenset()
        root = owner.split(".", 1)[0]
        for hit in self._hits.get(attr, ()):
            if (f".{attr}.copy_(" in hit.text and self._after_load(hit)
                    and hit.receiver.split(".", 1)[0] == root
                    and (root != "self" or hit.cls in family)):
                return dataclasses.replace(self._reader(hit), kind=ReaderKind.FORWARD)
        return None


def _is_kernel(callee: str) -> bool:
    """Whether a call's dotted name names a kernel (:data:`_KERNEL_CALL`, read word by word:
    ``invoke_fused_moe_kernel``) or a kernel wrapper's launch (``prefill_wrapper.run``); a
    class's construction never does."""
    if callee.rsplit(".", 1)[-1][:1].isupper():
        return False  # a class built (``AiterFlashAttentionMetadata(...)``), not a launch
    words = callee.replace("_", " ") + "("  # ``api.mm``: read as the call ``mm(``
    return bool(_KERNEL_CALL.search(words) or _KERNEL_WRAPPER.search(words))


def _warm_up(hit: _Hit) -> bool:
    """Whether the read sits in a warm-up, compile or profiling function (:data:`_WARM_UP`)."""
    return any(_WARM_UP.search(f) for f in hit.funcs)


def escapes(function_text: str, name: str) -> bool:
    """Whether the local ``name`` built in a function leaves it: returned, stored whole into
    another holder, or passed as an argument. A local that does not is a throwaway object."""
    n = re.escape(name)
    if not re.search(rf"^\s*{n}\s*=\s*[\w.]+\(", function_text, re.M):
        return True  # not built here: a parameter or a lookup, so it may be kept elsewhere
    if re.search(rf"\breturn\b[^\n]*\b{n}\b(?!\.)", function_text):
        return True
    if re.search(rf"=\s*{n}\s*(?:$|[,)\]#])", function_text, re.M):
        return True
    if re.search(rf"[(,]\s*{n}\s*(?=[,)])", function_text):
        return True
    return bool(re.search(rf"[\[{{(,]\s*{n}\s*[,\]}}]", function_text))


LOCAL_HOPS = 6
"""How many local assignments :func:`derives_from` follows back from the stored value."""

_GETATTR = re.compile(r"\bgetattr\(\s*([A-Za-z_][\w.]*)\s*,\s*[\"'](\w+)[\"']\s*(?:,[^()]*)?\)")
_TARGET_HEAD = re.compile(r"[ \t]*(?:[\w, ().]*[^\w.])?")
_TARGET_TAIL = re.compile(r"[\w, ().]*=(?!=)[ \t]*")
"""An assignment target list around a local's name: ``a, (b, self.c) = ...``."""
_SKIP_LOCALS = frozenset({"self", "layer", "torch", "None", "True", "False"})


def derives_from(expr: str, function_text: str, stored: str,
                 locals_seen: Mapping[str, str] | None = None,
                 prefer: Callable[[str], bool] | None = None) -> str | None:
    """The weight the stored value is computed from: an attribute named like a weight in the
    value (``getattr(obj, "name")`` read as ``obj.name``), or in the first assignment of each
    local the value reads, followed back local by local (tuple targets and bracketed
    continuation lines included) for up to :data:`LOCAL_HOPS` locals; None when none names one
    (a workspace, a constant). A name for metadata (``weight_type``, ``weight_dtype``...) is
    not a weight. Within one value, an attribute ``prefer`` holds (one post-load code
    computes, :mod:`.computed_after_load`) is named before the others."""
    found = _weight_in(_GETATTR.sub(r"\1.\2", expr), stored, prefer)
    if found:
        return found
    header = function_text[:function_text.find(")") + 1] if function_text else ""
    params = set(re.findall(r"[(,]\s*\*{0,2}([A-Za-z_]\w*)", header))
    seen = set(locals_seen or ()) | _SKIP_LOCALS
    queue = [expr]
    hops = 0
    while queue and hops <= LOCAL_HOPS:
        value = queue.pop(0)
        for local in re.findall(r"\b([A-Za-z_]\w*)\b(?!\s*[(=])", value):
            if local in params and _WEIGHT_PARAM.match(local):
                return f"argument {local}"
            if local in seen or hops >= LOCAL_HOPS:
                continue
            seen.add(local)
            bounds = _assignments(function_text, local)
            hops += bool(bounds)
            for bound in bounds[:1]:
                found = _weight_in(bound, stored, prefer)
                if found:
                    return found
                queue.append(bound)
    return None


def _assignments(function_text: str, local: str) -> list[str]:
    """The values assigned to ``local`` in ``function_text`` (whole statements, one line each,
    ``getattr(obj, "name")`` read as ``obj.name``), in source order."""
    out = []
    for name in re.finditer(rf"(?<![\w.]){re.escape(local)}\b", function_text):
        head = function_text[function_text.rfind("\n", 0, name.start()) + 1:name.start()]
        m = _TARGET_TAIL.match(function_text, name.end())
        if m is None or not _TARGET_HEAD.fullmatch(head):
            continue
        end, depth = m.end(), 0
        while end < len(function_text):
            c = function_text[end]
            if c in "([{":
                depth += 1
            elif c in ")]}":
                depth -= 1
            elif c == "\n" and depth <= 0:
                break
            end += 1
        lines = [re.sub(r"#[^\"'\n]*$", "", ln) for ln in function_text[m.end():end].split("\n")]
        value = re.sub(r"(?<=[(\[]) | (?=[)\]])", "", " ".join(" ".join(lines).split()))
        out.append(_GETATTR.sub(r"\1.\2", value))
    return out


def _weight_in(text: str, stored: str,
               prefer: Callable[[str], bool] | None = None) -> str | None:
    """The first weight named in ``text``; with ``prefer``, among several attribute reads
    before the first call, the first one ``prefer`` holds (else the first)."""
    reads: list[tuple[str, str]] = []  # (whole, attribute) of the attribute reads so far
    for m in _WEIGHT_WORD.finditer(text):
        whole = m.group(0)
        call = text[m.end():m.end() + 1] == "("
        if _META_READ.match(text, m.end()) or (not call and _META_NAME.search(m.group(1))):
            continue  # only its device, dtype or shape, or a name for metadata
        if m.group(1) == stored or whole.startswith(("torch.", "F.")):
            continue
        if "." not in whole and not call:
            continue  # a bare local: its definition is followed instead
        if call:
            if reads:
                break
            close = text.find(")", m.end())
            found = text[m.start():close + 1] if close > 0 else whole
            return found if len(found) <= 160 else found[:156] + "...)"
        if prefer is None:
            return whole
        reads.append((whole, m.group(1)))
    if len(reads) > 1:
        return next((whole for whole, attr in reads if prefer(attr)), reads[0][0])
    return reads[0][0] if reads else None
