"""In-process A/B of this branch's cut: after each warm compile at argv[1] (default 100000)
of this tree, the first gc.collect(0) with base's lists made again ("base": the address
checks' copies of their callers' lists, their words' copies, the exact compare's range list,
the holder table's fast flags and the refill table's engine flags and byte counts as lists)
or not ("mine"). Rounds alternate the order; each round its own fresh model and compile."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # first_collect_ab

from first_collect_ab import run  # noqa: E402


def _rebase(plan) -> int:
    """Base's lists made again (young, as base's were); the references they hold."""
    extra = 0
    # (the derived storages' startup check is made over fresh lists: base copied them and
    # dropped the caller's, so one list each in base as here; its words and indices differ)
    checks = [(plan.holders.table._at, True), (plan.tensors._startup, False)]
    if plan.holders._source_checks is not None:
        checks.append((plan.holders._source_checks[2], True))
    for at, copied in checks:
        if at is None:
            continue
        shared = at.tensors
        if copied:
            at.tensors, at.ptrs = list(at.tensors), list(at.ptrs)
            extra += 2 * len(at.ptrs)
        at._indices = list(range(len(at.ptrs)))
        extra += len(at.ptrs)
        # (words sharing the check's list: base's made a copy; the sources' words offered
        # by the compile's read keep that read's list, in base as here)
        if at.words is not None and at.words.tensors is shared:
            at.words.tensors = list(shared)
            extra += len(shared)
    table = plan.holders.table
    table.fast = list(map(bool, table.fast))
    extra += len(table.fast)
    refill = plan._refill_table
    if refill is not None:
        refill.engine = [False] * len(refill.engine)
        refill.nbytes = list(refill.nbytes)
        extra += 2 * len(refill.engine)
    return extra


run(_rebase)
