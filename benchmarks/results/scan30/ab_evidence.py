"""The evidence phase (``apply_evidence``, ``--jobs 1``) in one process on vLLM's findings,
alternating the former paths (e138b65: ``function_text`` memoised by a process-wide
``lru_cache(4096)``, fresh per pass as in a cold CLI; ``source_dropped`` testing every file of
the tree per call, each text's 0-element allocation test memoised by ``lru_cache(8192)``) with
scan30's (a per-pass ``FunctionTexts`` memo; the per-text test memoised in a dict the pass
owns). CPU time (process plus reaped children) per pass; the judged findings must be equal in
every pass.

    PYTHONPATH=. python3 benchmarks/results/scan30/ab_evidence.py 5 \
        > benchmarks/results/scan30/ab_evidence.txt
"""
import functools
import re
import resource
import sys
from contextlib import ExitStack
from unittest import mock

from ab_alternate import alternate

import derivgraph.audit.static.evidence as E
import derivgraph.audit.static.platforms as P
import derivgraph.audit.static.scan as S
from tests.audit.static.test_static_scan30_paths import former_source_dropped

print(f"# derivgraph from {E.__file__}")

captured: dict = {}
real_apply = S.apply_evidence


def capture(*a, **k):
    captured["args"], captured["kwargs"] = a, k
    captured["findings"] = list(a[0])
    return real_apply(captured["findings"], *a[1:], **k)


with mock.patch.object(S, "apply_evidence", capture):
    S.scan(package="vllm", jobs=1)


def former_texts_factory():
    cached = functools.lru_cache(maxsize=4096)(E.function_text)

    class FormerTexts:
        def __call__(self, text, function):
            return cached(text, function)
    return FormerTexts


def cpu() -> float:
    a, b = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return a.ru_utime + a.ru_stime + b.ru_utime + b.ru_stime


def one_pass(former: bool) -> tuple[float, list]:
    with ExitStack() as stack, S.young_collections_only():
        if former:
            stack.enter_context(mock.patch.object(E, "FunctionTexts", former_texts_factory()))
            stack.enter_context(mock.patch.object(E, "source_dropped", former_source_dropped))
        start = cpu()
        out = real_apply(captured["findings"], *captured["args"][1:], **captured["kwargs"])
        return cpu() - start, out


alternate(int(sys.argv[1]) if len(sys.argv) > 1 else 3, one_pass,
          f"{len(captured['findings'])} findings")
