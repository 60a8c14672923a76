"""Fixtures shared by the static-audit test modules."""

from __future__ import annotations

import pytest

from derivgraph.audit.static.scan import scan
from tests.audit.static.expectations import CORPUS


@pytest.fixture(scope="module")
def corpus_report():
    return scan([CORPUS], specs=[], jobs=1)


@pytest.fixture(scope="module")
def vllm_report():
    """The audit of the installed vLLM (skipped without it)."""
    pytest.importorskip("vllm")
    return scan(package="vllm")
