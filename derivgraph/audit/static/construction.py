"""Where the scanned tree builds a class: at model construction, or in post-load code.

The scope rule of :mod:`.scope` treats the constructor of every *rebuilt-object class*
(a name with ``Kernel``, ``Experts``, ``MoE``, ``Prepared``...) as post-load code, because vLLM's
post-load steps rebuild experts, kernels and MoE quant configs on every reload. A class of that
name that the tree builds only outside post-load code (in a module's ``__init__``, a runner's
set-up, at import) is built once, when the model is constructed, and a reload never reruns its
constructor: the workspaces and weight-free tables it allocates keep their storage and values.

This module finds, by text over the whole tree (no parsing), the functions that call ``C(...)``;
:func:`built_at_construction` says which classes are built only in functions that no post-load
method reaches (the reach the audit computed). A class with no visible call (built through a
variable, ``experts_cls(...)``, or ``cls(...)``) stays a rebuilt object.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping, Sequence

from derivgraph.audit.static.alternation import words_pattern
from derivgraph.audit.static.forked import forked_chunks, workers_for

__all__ = ["Construction", "built_at_construction", "construction_sites"]

Construction = tuple[int, str | None, str | None]
"""Where a class is built: (file index, class of the enclosing method, outermost enclosing
function; None at module level)."""

_HEADER = re.compile(r"^([ \t]*)(?:async[ \t]+)?(def|class)[ \t]+(\w+)", re.M)


def _enclosing(text: str, pos: int, headers: Sequence[tuple[int, int, str, str]]
               ) -> tuple[str | None, str | None]:
    """(class, outermost function) around ``pos``, from the def/class headers before it."""
    line_start = text.rfind("\n", 0, pos) + 1
    indent = len(text[line_start:pos]) - len(text[line_start:pos].lstrip(" \t"))
    chain: list[tuple[int, str, str]] = []  # enclosing headers, innermost first
    for start, depth, kind, name in reversed(headers):
        if start >= line_start:
            continue
        if depth < indent:
            chain.append((depth, kind, name))
            indent = depth
            if depth == 0:
                break
    chain.reverse()  # outermost first
    cls = chain[0][2] if chain and chain[0][1] == "class" else None
    funcs = [name for _, kind, name in chain if kind == "def"]
    return cls, funcs[0] if funcs else None


def construction_sites(texts: Sequence[str], names: Collection[str], jobs: int | None = None
                       ) -> dict[str, list[Construction]]:
    """For each class name, every place of the tree that calls ``Name(...)`` (also
    ``module.Name(...)``), with its enclosing class and outermost function. ``jobs``: forked
    workers sharing the texts (:mod:`.forked`)."""
    out: dict[str, list[Construction]] = {n: [] for n in names}
    if not names:
        return out
    # ``(?<!\w)(Name|...)[ \t]*\(`` searched in the reversed text, where it starts at the
    # ``(`` (a search skips to each ``(``; forwards, every position tries every name). The
    # matches are the same: a name bounded by a non-word character and ``[ \t]*(``
    call = re.compile(r"\([ \t]*(" + words_pattern(n[::-1] for n in names) + r")(?!\w)")

    def calls_in(text: str) -> list[tuple[str, str | None, str | None]]:
        found: list[tuple[str, str | None, str | None]] = []
        matches = list(call.finditer(text[::-1]))
        if not matches:
            return found
        headers = [(h.start(), len(h.group(1).expandtabs()), h.group(2), h.group(3))
                   for h in _HEADER.finditer(text)]
        size = len(text)
        for m in reversed(matches):  # in text order
            start = size - m.end(1)
            line_start = text.rfind("\n", 0, start) + 1
            before = text[line_start:start].strip()
            if before in ("class", "def", "async def"):
                continue  # the class statement itself
            found.append((m.group(1)[::-1], *_enclosing(text, start, headers)))
        return found

    per_file: list[list[tuple[str, str | None, str | None]]] = [[] for _ in texts]
    workers = workers_for(len(texts), jobs, 512)
    for chunk, found in forked_chunks(lambda ks: [calls_in(texts[k]) for k in ks], len(texts),
                                      workers, max(-(-len(texts) // (4 * workers)), 1)):
        for k, calls in zip(chunk, found):
            per_file[k] = calls
    for index, calls in enumerate(per_file):
        for name, cls, func in calls:
            out[name].append((index, cls, func))
    return out


def built_at_construction(names: Iterable[str], texts: Sequence[str],
                          post_load: Collection[tuple[int, str | None, str]],
                          subclasses: Mapping[str, Collection[str]] | None = None) -> set[str]:
    """The classes among ``names`` that the tree builds somewhere, and (with every subclass,
    whose constructor runs theirs) only in functions no post-load method reaches
    (``post_load``: (file index, class, function) reached)."""
    names = set(names)
    family = {n: {n, *(subclasses or {}).get(n, ())} for n in names}
    # in this process: the search takes ~0.1 s for vLLM's 3231 files, less than forking
    sites = construction_sites(texts, set().union(*family.values()) if family else set(),
                               jobs=1)
    out = set()
    for name, members in family.items():
        found = [site for member in members for site in sites.get(member, [])]
        if sites.get(name) and not any(func is not None and (file, cls, func) in post_load
                                       for file, cls, func in found):
            out.add(name)
    return out
