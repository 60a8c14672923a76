"""Run one function over chunks of work in forked workers that inherit the caller's memory.

The static audit's phases read large tables (the tree's texts, its index, the reader index):
forked workers inherit them, so only the chunk's item numbers travel to a worker and only its
results travel back. Where ``fork`` is not available, or the work is too small to share, the
chunks run in this process, in order.

Example::

    from derivgraph.audit.static.forked import forked_chunks
    squares = {}
    for chunk, results in forked_chunks(lambda ks: [k * k for k in ks], 100, jobs=2, size=8):
        squares.update(zip(chunk, results))
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import gc
import multiprocessing
import os
from collections.abc import Callable, Hashable, Iterator, Sequence
from typing import Any, TypeVar

from derivgraph.errors import WorkerLost

__all__ = ["affinity_order", "forked_chunks", "frozen_for_fork", "workers_for"]

_R = TypeVar("_R")
_Work = Callable[[list[int]], list[Any]]
_STATE: _Work | None = None


def workers_for(total: int, jobs: int | None, per_worker: int) -> int:
    """How many workers ``total`` items are worth: at most ``jobs`` (default: the CPU count),
    at least ``per_worker`` items each, and 1 where ``fork`` is not available."""
    if "fork" not in multiprocessing.get_all_start_methods():
        return 1
    return min(jobs or os.cpu_count() or 1, max(total // per_worker, 1))


def affinity_order(keys: Sequence[Hashable], workers: int) -> list[int]:
    """The item numbers ``0 .. len(keys) - 1`` in the order that hands every item of one key
    to one worker: chunk the result into ``workers`` runs of ``ceil(len / workers)`` items.
    Keys go, largest first, to the run with the fewest items so far (ties: the first run);
    within a run, items keep their order. A worker then builds each key's tables (a file's
    parsed tree, its memos) once, where dealing every n-th item to each worker has both build
    most of them. Only the boundary between runs can split a key."""
    groups: dict[Hashable, list[int]] = {}
    for k, key in enumerate(keys):
        groups.setdefault(key, []).append(k)
    runs: list[list[int]] = [[] for _ in range(max(workers, 1))]
    for members in sorted(groups.values(), key=len, reverse=True):  # stable: first seen first
        min(runs, key=len).extend(members)
    return [k for run in runs for k in sorted(run)]


@contextlib.contextmanager
def frozen_for_fork() -> Iterator[None]:
    """The caller's objects in the permanent generation (:func:`gc.freeze`) while workers are
    forked and run, then back in the oldest generation (:func:`gc.unfreeze`).

    A worker's collections then never walk what it inherited. Without it, the first
    ``gc.collect(0)`` of each worker walked every object the caller had made since its own last
    collection (the scan's texts, tree index and tables: about 0.05 s CPU per worker and phase)
    and wrote each one's gc header, copying its memory page. Only where nothing else is frozen:
    unfreezing would thaw a caller's frozen objects too."""
    if gc.get_freeze_count():
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def _call(chunk: list[int]) -> list[Any]:
    """Worker side: the work was inherited through fork, so only item numbers travel."""
    assert _STATE is not None, "worker forked without work"
    return _STATE(chunk)


def forked_chunks(work: Callable[[list[int]], list[_R]], total: int, jobs: int,
                  size: int) -> Iterator[tuple[list[int], list[_R]]]:
    """``(chunk, work(chunk))`` for the chunks of ``range(total)`` of ``size`` items, from
    ``jobs`` forked workers as each chunk completes (with ``jobs <= 1``, or inside another
    ``forked_chunks``: here, in order). A worker that dies mid-phase raises
    :class:`~derivgraph.errors.WorkerLost`; one that raises hands its error on as is."""
    global _STATE
    chunks = [list(range(k, min(k + size, total))) for k in range(0, total, size)]
    if jobs <= 1 or _STATE is not None:  # nested (in a worker, or in another map): here
        for chunk in chunks:
            yield chunk, work(chunk)
        return
    _STATE = work
    try:
        with frozen_for_fork(), cf.ProcessPoolExecutor(
                jobs, mp_context=multiprocessing.get_context("fork")) as pool:
            futures = {pool.submit(_call, chunk): chunk for chunk in chunks}
            for fut in cf.as_completed(futures):
                yield futures[fut], fut.result()
    except cf.process.BrokenProcessPool as exc:
        raise WorkerLost(
            f"a forked audit worker died mid-phase ({exc}); it was killed or ran out of memory\n"
            f"    fix: rerun with --jobs 1 (one process), or free memory") from exc
    finally:
        _STATE = None
