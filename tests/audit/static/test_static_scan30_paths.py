"""scan30's evidence paths give what the former ones gave.

``function_text`` lost its process-wide ``lru_cache`` (it kept every file text it saw alive
for the process): the evidence pass memoises it in a :class:`FunctionTexts` it owns.
``source_dropped`` memoised each text's 0-element allocation test in a process-wide
``lru_cache`` too: the pass now owns that memo (a dict, display path -> found). The corpora are
scanned with the former paths patched back in and with scan30's: the same findings; canaries
plant a wrong memo of each kind.
"""

from __future__ import annotations

import functools
import re
from contextlib import ExitStack
from unittest import mock

import pytest

import derivgraph.audit.static.evidence as evidence
import derivgraph.audit.static.platforms as platforms
from derivgraph.audit.static.scan import scan
from tests.audit.static.expectations import CORPUS, EVIDENCE_CORPUS


def former_source_dropped(derives_from, body, tree, at=None, **_pass_memo):
    """``source_dropped`` as e138b65 answered it: every file's 0-element test made afresh on
    each call (its process-wide cache only saved repeats), no memo shared across calls: the
    reference this file and scan30's A/B script compare the pass's memo with."""
    return platforms.source_dropped(derives_from, body, tree, at)


class _FormerTexts:
    """``function_text`` behind a process-wide ``lru_cache`` (e138b65)."""

    cached = staticmethod(functools.lru_cache(maxsize=4096)(evidence.function_text))

    def __call__(self, text: str, function: str) -> str:
        return self.cached(text, function)


class _TextKeyedTexts:
    """A wrong memo (planted): keyed on the file's text only (a file's first function asked
    answers for every later one)."""

    def __init__(self) -> None:
        self.memo: dict[str, str] = {}

    def __call__(self, text: str, function: str) -> str:
        return self.memo.setdefault(text, evidence.function_text(text, function))


def _findings(former: bool = False, texts: type | None = None, allocates=None) -> list:
    with ExitStack() as stack:
        if former:
            stack.enter_context(mock.patch.object(evidence, "FunctionTexts", _FormerTexts))
            stack.enter_context(
                mock.patch.object(evidence, "source_dropped", former_source_dropped))
        if texts is not None:
            stack.enter_context(mock.patch.object(evidence, "FunctionTexts", texts))
        if allocates is not None:
            real = platforms.source_dropped

            def planted(*a, allocates_memo=allocates, **k):
                k["allocates"] = dict(allocates_memo)  # a memo filled wrong before the pass
                return real(*a, **k)
            stack.enter_context(mock.patch.object(evidence, "source_dropped", planted))
        return scan([CORPUS, EVIDENCE_CORPUS], specs=[], jobs=1).findings


@pytest.fixture(scope="module")
def now() -> list:
    return _findings()


def test_evidence_is_the_former_paths_on_the_corpora(now):
    assert len(now) > 300
    assert now == _findings(former=True)
    emptied = [f for f in now if "parameter is emptied at" in (f.evidence or "")]
    assert emptied, "the corpora exercise source_dropped's tree search"
    assert sum(f.reader is not None for f in now) > 100


def test_canary_a_memo_keyed_on_the_text_only_changes_the_findings(now):
    assert _findings(texts=_TextKeyedTexts) != now


def test_canary_an_allocation_memo_missing_a_file_changes_the_findings(now):
    named = {m.group(1) for f in now
             if (m := re.search(r"is emptied at (\S+):\d+", f.evidence or ""))}
    assert named
    assert _findings(allocates=dict.fromkeys(named, False)) != now


def test_the_allocation_memo_holds_the_per_text_test():
    tree = {p.name: p.read_text() for p in sorted(EVIDENCE_CORPUS.rglob("*.py"))}
    tree["late.py"] = "self.late.weight = torch.empty(\n    0, 4)\n"
    memo: dict[str, bool] = {}
    got = platforms.source_dropped("self.late.weight", "", tree, allocates=memo)
    assert got is not None and "late.py:1" in got
    assert memo == {d: platforms._EMPTY_0.search(t) is not None for d, t in tree.items()
                    if "late" in t}
    assert memo["late.py"] is True and platforms.source_dropped(
        "self.late.weight", "", tree, allocates=memo) == got


def test_function_text_keeps_no_text_alive():
    """No process-wide cache: the texts are held only by the pass's own memo."""
    assert not hasattr(evidence.function_text, "cache_info")
    assert not hasattr(platforms, "_allocates_empty")  # nor the 0-element test's
    memo = evidence.FunctionTexts()
    text = "class A:\n    def f(self):\n        return 1\n"
    assert memo(text, "A.f") == "    def f(self):\n        return 1\n"
    assert memo(text, "A.g") == "" and len(memo._memo) == 2

