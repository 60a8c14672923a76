"""The static audit's forked map (:mod:`derivgraph.audit.static.forked`) and the text scans
made faster for the scan-time goal (scan27): each gives what the one-process, one-pass code
gives."""

from __future__ import annotations

import contextlib
import gc
import os

import derivgraph.audit.static.forked as forked_module
from derivgraph.audit.static.construction import construction_sites
from derivgraph.audit.static.forked import forked_chunks, workers_for
from derivgraph.audit.static.readers import _FileDefs


def test_forked_chunks_cover_every_item_once_from_other_processes() -> None:
    parent = os.getpid()
    seen = {}
    for chunk, results in forked_chunks(lambda ks: [(k * k, os.getpid()) for k in ks], 50,
                                        jobs=2, size=7):
        for k, (square, pid) in zip(chunk, results):
            assert k not in seen
            seen[k] = (square, pid)
    assert sorted(seen) == list(range(50))
    assert all(square == k * k for k, (square, _) in seen.items())
    assert all(pid != parent for _, pid in seen.values())


def test_forked_chunks_nested_run_in_the_worker() -> None:
    def nested(k: int) -> int:
        return sum(r[0] for _, r in forked_chunks(lambda js: [k + j for j in js], 3, 2, 1))

    def inner(ks: list[int]) -> list[int]:
        return [nested(k) for k in ks]

    got = dict(kv for chunk, res in forked_chunks(inner, 4, jobs=2, size=1)
               for kv in zip(chunk, res))
    assert got == {k: 3 * k + 3 for k in range(4)}  # (k + 0) + (k + 1) + (k + 2)


def _young_objects_in_workers() -> list[int]:
    """How many objects the young generations of each worker hold when it starts its work,
    the caller (collector paused, as in the scan) having just made 5000."""
    gc.collect()
    gc.disable()
    try:
        kept = [[k] for k in range(5000)]
        found = [n for _, res in forked_chunks(
            lambda ks: [len(gc.get_objects(generation=0)) + len(gc.get_objects(generation=1))
                        for _ in ks], 4, jobs=2, size=1) for n in res]
    finally:
        gc.enable()
    assert len(kept) == 5000 and len(found) == 4
    return found


def test_workers_inherit_the_callers_objects_frozen() -> None:
    """A worker's collections never walk (nor write to) what it inherited; the caller's
    objects are unfrozen after."""
    assert max(_young_objects_in_workers()) < 1000
    assert gc.get_freeze_count() == 0


def test_workers_without_the_freeze_inherit_young_objects(monkeypatch) -> None:
    """Canary: without :func:`frozen_for_fork` the 5000 are young in every worker."""
    monkeypatch.setattr(forked_module, "frozen_for_fork", contextlib.nullcontext)
    assert min(_young_objects_in_workers()) >= 5000


def test_a_callers_frozen_objects_stay_frozen_across_forked_work() -> None:
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        assert sorted(k for chunk, _ in forked_chunks(lambda ks: ks, 4, 2, 1) for k in chunk) \
            == [0, 1, 2, 3]
        assert gc.get_freeze_count() == frozen
    finally:
        gc.unfreeze()


def test_workers_for_small_work_stays_in_one_process() -> None:
    assert workers_for(10, 2, 16) == 1
    assert workers_for(100, 2, 16) == 2
    assert workers_for(100, 1, 16) == 1


def test_construction_sites_forked_equal_one_process() -> None:
    texts = ["class A:\n    def f(self):\n        return Kern(1)\n",
             "x = Kern(2)\n", "def g():\n    return mod.Kern(3)\n", "class Kern:\n    pass\n"]
    texts = texts * 300  # enough for two workers
    one = construction_sites(texts, {"Kern"}, jobs=1)
    two = construction_sites(texts, {"Kern"}, jobs=2)
    assert two == one
    assert one["Kern"][:3] == [(0, "A", "f"), (1, None, None), (2, None, "g")]
    assert len(one["Kern"]) == 900  # the class statement itself is not a call


def test_file_defs_keep_only_headers_at_a_line_start() -> None:
    text = ("class A:\n    @property\n    def p(self):\n        pass\n"
            "    async def q(self):  # a subclass X is named\n        pass\n"
            "x = 1  # the class def statement\n")
    rows = _FileDefs(text).rows
    assert [(kind, name, indent, prop) for _, indent, kind, name, prop in rows] == [
        # an async method's indent: len("    async ") - 5
        ("class", "A", 0, False), ("def", "p", 4, True), ("def", "q", 5, False)]


def test_statement_start_skips_strings_comments_and_brackets() -> None:
    text = 'def f():\n    s = "a;b" ; t = (1,\n        2); u = g(x)  # c;d\n    v = 1\n'
    defs = _FileDefs(text)
    assert defs.statement_start(text.index("2)")) == text.index("t = (1")
    assert defs.statement_start(text.index("g(x)")) == text.index("u = g")
    assert defs.statement_start(text.index("a;b") + 2) == text.index("s = ")
    assert defs.statement_start(text.index("v = 1") + 4) == text.index("v = 1")
