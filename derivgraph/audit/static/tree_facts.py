"""Per-file text facts for the tree-wide context, found in forked workers, merged in file order.

The context of a tree-wide scan (:func:`.scan._context`) needs, for every file, its class
statements, its module-level functions annotated to return a tensor, its entries in the tree
index (:mod:`.index`) and whether its text alone marks it as holding post-load code. Each of
these depends on that file's text only, so workers find them (:mod:`.forked`) and the caller
merges them in file order: the same tables a serial pass builds.

Example::

    from derivgraph.audit.static.tree_facts import tree_facts
    facts = tree_facts([("pkg.mod", "class A(B):\\n    pass\\n")], jobs=1)
    assert facts[0].classes == [("A", ["B"])]
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from derivgraph.audit.static.classwide import GATE_RE as CLASS_WIDE_RE
from derivgraph.audit.static.forked import forked_chunks, workers_for
from derivgraph.audit.static.index import DEF_HEADER_END, TreeIndex, index_file
from derivgraph.audit.static.scope import (
    LAZY_GUARD_RE,
    ROOT_ASSIGN_RE,
    ROOT_DEF_RE,
    regex_classes,
)
from derivgraph.audit.static.staging import has_staging_copy

__all__ = ["FileFacts", "file_facts", "tree_facts"]

_DEF_RE = re.compile(r"def[ \t]+(\w+)[ \t]*\(")  # a literal start; column 0 is checked in code
_TENSOR_WORD_RE = re.compile(r"Tensor|Parameter|Buffer")
_PER_WORKER = 64
"""Files per chunk (and the fewest worth a worker): a file's facts take about half a ms."""


@dataclass
class FileFacts:
    """What the tree-wide context takes from one file's text."""

    classes: list[tuple[str, list[str]]]  # (class, base short names): :func:`.regex_classes`
    tensor_functions: list[tuple[str, str]]  # (module-level function, tensor return annotation)
    index: TreeIndex  # this file's entries alone (:func:`.index.index_file`)
    rooted: bool  # a post-load root (def or assignment), a lazy guard or a class-wide gate
    staging: bool  # a staging copy (:func:`.staging.has_staging_copy`)


def tensor_functions(text: str) -> Iterator[tuple[str, str]]:
    """(name, return annotation) of module-level functions whose annotation names a tensor type
    (a text scan, no parse; :func:`.infer.annotation_shape` reads the annotation later)."""
    if "Tensor" not in text and "Parameter" not in text:
        return
    for m in _DEF_RE.finditer(text):
        start = m.start()
        if start and text[start - 1] != "\n" and not (
                start >= 6 and text[start - 6:start] == "async " and
                (start == 6 or text[start - 7] == "\n")):
            continue  # not a module-level function
        end = DEF_HEADER_END.search(text, m.end())
        if end and end.group(1) and _TENSOR_WORD_RE.search(end.group(1)):
            yield m.group(1), " ".join(end.group(1).split())


def file_facts(file: int, module: str, text: str) -> FileFacts:
    """The facts of file number ``file`` (module name ``module``)."""
    rooted = bool(ROOT_DEF_RE.search(text) or ROOT_ASSIGN_RE.search(text)
                  or LAZY_GUARD_RE.search(text) or CLASS_WIDE_RE.search(text))
    return FileFacts(list(regex_classes(text)), list(tensor_functions(text)),
                     index_file(file, module, text), rooted, has_staging_copy(text))


def tree_facts(files: Sequence[tuple[str, str]], jobs: int | None) -> list[FileFacts]:
    """The facts of ``(module name, text)`` files, in their order, from up to ``jobs``
    forked workers (default: one per CPU)."""
    def work(chunk: list[int]) -> list[FileFacts]:
        return [file_facts(i, *files[i]) for i in chunk]

    out: list[FileFacts | None] = [None] * len(files)
    workers = workers_for(len(files), jobs, _PER_WORKER)
    for chunk, found in forked_chunks(work, len(files), workers, _PER_WORKER):
        for i, facts in zip(chunk, found):
            out[i] = facts
    return [f for f in out if f is not None]
