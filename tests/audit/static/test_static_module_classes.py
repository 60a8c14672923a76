"""``source_tree.module_classes``: the class names a module defines at its top level or imports
with ``from`` at any depth, read from the parsed module (a selector's kernel candidates)."""

from __future__ import annotations

import re

from derivgraph.audit.static.readers import ReaderIndex
from derivgraph.audit.static.source_tree import CLASS_NAME, module_classes

SELECTOR = '''\
"""Selects a kernel. import NotAnImport"""
import torch.nn.functional as F
from pkg.kernels import (  # noqa: E501
    MarlinExperts,
    CutlassExperts as Cutlass,  # CUDA only
    helper,
)


class Selector:
    class Nested:
        pass

    def pick(self, backend):
        # import Commented
        if backend == "triton":
            from pkg.triton_kernels import TritonExperts
            return TritonExperts
        return MarlinExperts
'''


def _index() -> ReaderIndex:
    return ReaderIndex([], (), lambda c: frozenset({c}))


def test_top_level_classes_and_from_imports_at_any_depth() -> None:
    assert module_classes(_index(), SELECTOR) == {
        "Selector", "MarlinExperts", "CutlassExperts", "Cutlass", "TritonExperts"}


def test_unparsable_text_has_no_classes() -> None:
    assert module_classes(_index(), "class Broken(:\n") == frozenset()


def _text_reader(text: str) -> frozenset[str]:
    """The text reader this replaced (regexes over the raw text)."""
    imported = re.compile(r"\bimport[ \t]*(?:\(([^)]*)\)|([\w, \t]+))")
    names = {n for m in imported.finditer(text) for n in CLASS_NAME.findall(m.group(1)
                                                                            or m.group(2))}
    names.update(re.findall(r"^class[ \t]+(\w+)", text, re.M))
    return frozenset(names)


def test_canary_the_text_reader_takes_comments_and_docstrings_for_classes() -> None:
    # the linter code in the import's comment, the word in the docstring and in the comment
    # after ``# import``: what the ast reader above does not count
    wrong = _text_reader(SELECTOR) - module_classes(_index(), SELECTOR)
    assert {"E501", "NotAnImport", "Commented", "CUDA"} <= wrong
