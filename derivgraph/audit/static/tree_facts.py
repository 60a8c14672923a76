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

from collections.abc import Sequence
from dataclasses import dataclass

from derivgraph.audit.static.classwide import GATE_RE as CLASS_WIDE_RE
from derivgraph.audit.static.forked import forked_chunks, workers_for
from derivgraph.audit.static.index import TreeIndex, scan_file
from derivgraph.audit.static.scope import LAZY_GUARD_RE, ROOT_ASSIGN_RE, ROOT_DEF_RE
from derivgraph.audit.static.staging import has_staging_copy

__all__ = ["TREE_FACTS_PER_WORKER", "FileFacts", "file_facts", "tree_facts"]

TREE_FACTS_PER_WORKER = 64
"""Files per chunk (and the fewest worth a worker): a file's facts take about half a ms."""


@dataclass
class FileFacts:
    """What the tree-wide context takes from one file's text."""

    classes: list[tuple[str, list[str]]]  # (class, base short names): :func:`.regex_classes`
    tensor_functions: list[tuple[str, str]]  # (module-level function, tensor return annotation)
    index: TreeIndex  # this file's entries alone (:func:`.index.index_file`)
    rooted: bool  # a post-load root (def or assignment), a lazy guard or a class-wide gate
    staging: bool  # a staging copy (:func:`.staging.has_staging_copy`)


def file_facts(file: int, module: str, text: str) -> FileFacts:
    """The facts of file number ``file`` (module name ``module``): its classes, tensor
    functions and index entries from one pass over the text (:func:`.index.scan_file`)."""
    rooted = bool(ROOT_DEF_RE.search(text) or ROOT_ASSIGN_RE.search(text)
                  or LAZY_GUARD_RE.search(text) or CLASS_WIDE_RE.search(text))
    found = scan_file(file, module, text)
    return FileFacts(found.classes, found.tensor_functions, found.index, rooted,
                     has_staging_copy(text))


def tree_facts(files: Sequence[tuple[str, str]], jobs: int | None) -> list[FileFacts]:
    """The facts of ``(module name, text)`` files, in their order, from up to ``jobs``
    forked workers (default: one per CPU)."""
    def work(chunk: list[int]) -> list[FileFacts]:
        return [file_facts(i, *files[i]) for i in chunk]

    out: list[FileFacts | None] = [None] * len(files)
    workers = workers_for(len(files), jobs, TREE_FACTS_PER_WORKER)
    for chunk, found in forked_chunks(work, len(files), workers, TREE_FACTS_PER_WORKER):
        for i, facts in zip(chunk, found):
            out[i] = facts
    return [f for f in out if f is not None]
