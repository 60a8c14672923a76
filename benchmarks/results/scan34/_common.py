"""Helpers shared by scan34's measurement scripts (imported from this folder)."""
import gc
import resource
import time
from collections.abc import Callable

import derivgraph.audit.static.scan as S
from derivgraph.audit.static.sources import collect_files
from derivgraph.audit.static.tree_facts import tree_facts


def cpu() -> tuple[float, float]:
    """(this process's, its waited-for children's) user+sys CPU seconds."""
    a = resource.getrusage(resource.RUSAGE_SELF)
    b = resource.getrusage(resource.RUSAGE_CHILDREN)
    return a.ru_utime + a.ru_stime, b.ru_utime + b.ru_stime


def round_one_inputs():
    """vLLM's texts, the scan's context and round 1's candidate files, as scan._scan_files
    builds them (with the cyclic collector off, as the scan runs)."""
    gc.disable()
    texts = [(src, t) for src in collect_files((), "vllm") if (t := S._read(src)) is not None]
    facts = tree_facts([(src.module, t) for src, t in texts], 2)
    context = S._context(texts, facts)
    cands = [i for i, (_, t) in enumerate(texts) if S._is_candidate(t, facts[i], context)]
    return texts, context, cands


def wrap_cpu(obj: object, name: str, record: Callable[[float], None]) -> None:
    """Replace ``obj.name`` by a wrapper that hands each call's own-process CPU to ``record``."""
    f = getattr(obj, name)

    def w(*a, **k):
        s = time.process_time()
        try:
            return f(*a, **k)
        finally:
            record(time.process_time() - s)
    setattr(obj, name, w)
