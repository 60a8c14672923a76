"""Run one function over chunks of work in forked workers that inherit the caller's memory.

The static audit's phases read large tables (the tree's texts, its index, the reader index):
forked workers inherit them, so only the chunk's items travel to a worker and only its
results travel back. Where ``fork`` is not available, or the work is too small to share, the
chunks run in this process, in order. :class:`ForkedPool` keeps its workers across several
maps (the scan's rounds), so that a worker reuses what it built for an item's key before;
:func:`forked_chunks` is one map over item numbers in a pool of its own.

Example::

    from derivgraph.audit.static.forked import forked_chunks
    squares = {}
    for chunk, results in forked_chunks(lambda ks: [k * k for k in ks], 100, jobs=2, size=8):
        squares.update(zip(chunk, results))
"""

from __future__ import annotations

import contextlib
import gc
import multiprocessing
import os
import resource
import time
from collections import deque
from collections.abc import Callable, Hashable, Iterator, Sequence
from multiprocessing.connection import Connection, wait
from types import TracebackType
from typing import Any, Generic, TypeVar

from derivgraph.errors import WorkerLost

__all__ = ["CoresUsed", "ForkedPool", "affinity_order", "forked_chunks", "frozen_for_fork",
           "workers_for"]

_I = TypeVar("_I")
_R = TypeVar("_R")
_Work = Callable[[list[Any]], list[Any]]
_STATE: _Work | None = None
"""The work of the open pool (set before its workers fork, so they inherit it)."""
_IN_FLIGHT = 2
"""Chunks handed to a worker ahead of its results, so that it never waits for the next one;
the second only while more chunks wait than there are workers (a chunk handed out is that
worker's: at a map's end a spare one could keep the others idle). Items and results of a
chunk stay far below a socket's buffer, so neither side blocks sending."""


def workers_for(total: int, jobs: int | None, per_worker: int) -> int:
    """How many workers ``total`` items are worth: at most ``jobs`` (default: the CPU count),
    at least ``per_worker`` items each, and 1 where ``fork`` is not available."""
    if "fork" not in multiprocessing.get_all_start_methods():
        return 1
    return min(jobs or os.cpu_count() or 1, max(total // per_worker, 1))


class CoresUsed:
    """The cores this process and its workers used from its creation to :meth:`cores`: their
    CPU time (user and system; a worker's counts once it is joined) over the wall time. On a
    host that gives this machine's CPUs less time than they ask (other guests on its cores),
    two busy workers use little more than one core, and the forked phases then cost more CPU
    and more wall time than one process doing the same work."""

    def __init__(self) -> None:
        self._start = self._now()

    @staticmethod
    def _now() -> tuple[float, float]:
        me, workers = (resource.getrusage(resource.RUSAGE_SELF),
                       resource.getrusage(resource.RUSAGE_CHILDREN))
        return time.perf_counter(), (me.ru_utime + me.ru_stime + workers.ru_utime
                                     + workers.ru_stime)

    def cores(self) -> float:
        """CPU seconds per wall second since creation."""
        (wall0, cpu0), (wall1, cpu1) = self._start, self._now()
        return (cpu1 - cpu0) / max(wall1 - wall0, 1e-9)


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


def _serve(conn: Connection, others: list[Connection]) -> None:
    """Worker side: run the inherited work on each chunk of items received, send back
    ``(True, results)`` or ``(False, the exception)``, until ``None`` or the caller's end."""
    for other in others:  # the caller's ends of every pipe, inherited: only the caller's
        other.close()
    assert _STATE is not None, "worker forked without work"
    while True:
        try:
            items = conn.recv()
        except EOFError:
            return
        if items is None:
            return
        try:
            reply: tuple[bool, Any] = (True, _STATE(items))
        except Exception as exc:  # handed to the caller, which raises it
            reply = (False, exc)
        try:
            conn.send(reply)
        except Exception as exc:  # an unpicklable result or error: its text instead
            conn.send((False, RuntimeError(f"a worker's reply does not pickle: {exc!r}")))


def _lost(detail: str) -> WorkerLost:
    return WorkerLost(
        f"a forked audit worker died mid-phase ({detail}); it was killed or ran out of memory\n"
        f"    fix: rerun with --jobs 1 (one process), or free memory")


class ForkedPool(Generic[_I, _R]):
    """``workers`` processes forked once (on entering), inheriting the caller's memory and
    ``work`` (items -> their results, in order), that serve several :meth:`map` calls until
    the pool closes. With ``workers <= 1``, or opened inside another pool (in a worker, or
    while the caller holds one open), every map runs here, in order.

    A map with a ``key`` hands each item to the worker that last had its key, while that
    worker is free or has work queued; a free worker with nothing of its own takes items no
    worker had, then the last queued chunk of the busiest other worker. What a worker keeps
    for a key (the scan's parsed blocks of a file) then serves it again."""

    def __init__(self, work: Callable[[list[_I]], list[_R]], workers: int) -> None:
        self._work = work
        self._workers = workers
        self._procs: list[Any] = []
        self._conns: list[Connection] = []
        self._owner: dict[Hashable, int] = {}
        self._here = True

    def __enter__(self) -> ForkedPool[_I, _R]:
        global _STATE
        if self._workers <= 1 or _STATE is not None:
            return self
        _STATE = self._work
        self._here = False
        try:
            context = multiprocessing.get_context("fork")
            with frozen_for_fork():
                for _ in range(self._workers):
                    mine, theirs = context.Pipe()
                    self._conns.append(mine)
                    proc = context.Process(target=_serve, args=(theirs, self._conns),
                                           daemon=True)
                    proc.start()
                    theirs.close()
                    self._procs.append(proc)
        except BaseException:
            self._close(kill=True)
            raise
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self._close(kill=kind is not None)

    def _close(self, kill: bool) -> None:
        global _STATE
        if self._here:
            return
        for conn, proc in zip(self._conns, self._procs):
            if kill:
                proc.kill()
            else:
                with contextlib.suppress(OSError):
                    conn.send(None)
        for conn, proc in zip(self._conns, self._procs):
            proc.join()
            conn.close()
        self._procs, self._conns, self._here = [], [], True
        _STATE = None

    def map(self, items: Sequence[_I], size: int,
            key: Callable[[_I], Hashable] | None = None) -> Iterator[tuple[list[int], list[_R]]]:
        """``(positions, work(the items at them))`` for chunks of up to ``size`` items, as
        each chunk completes. A worker that dies raises
        :class:`~derivgraph.errors.WorkerLost`; one that raises hands its error on as is."""
        if self._here:
            for k in range(0, len(items), size):
                chunk = list(range(k, min(k + size, len(items))))
                yield chunk, self._work([items[p] for p in chunk])
            return
        n = len(self._conns)
        mine: list[list[int]] = [[] for _ in range(n)]
        free: list[int] = []
        for p, item in enumerate(items):
            owner = self._owner.get(key(item)) if key else None
            (free if owner is None else mine[owner]).append(p)
        queues = [deque(_chunked(ps, size)) for ps in mine]
        shared = deque(_chunked(free, size))
        flying: list[deque[list[int]]] = [deque() for _ in range(n)]

        def hand(w: int) -> None:
            if flying[w] and sum(map(len, queues)) + len(shared) <= n:
                return  # the map's end: no spare chunk
            if queues[w]:
                chunk = queues[w].popleft()
            elif shared:
                chunk = shared.popleft()
            else:
                busiest = max(range(n), key=lambda v: len(queues[v]))
                if not queues[busiest]:
                    return
                chunk = queues[busiest].pop()
            flying[w].append(chunk)
            self._conns[w].send([items[p] for p in chunk])

        for depth in range(1, _IN_FLIGHT + 1):  # one chunk each first, then the next
            for w in range(n):
                if len(flying[w]) < depth:
                    hand(w)
        ends = {conn: w for w, conn in enumerate(self._conns)}
        deaths = {proc.sentinel: w for w, proc in enumerate(self._procs)}
        while any(flying):
            for ready in wait([*ends, *deaths]):
                if ready in deaths:
                    if not self._conns[deaths[ready]].poll():
                        raise _lost(f"worker {self._procs[deaths[ready]].pid} exited")
                    continue  # its last reply first
                w = ends[ready]  # type: ignore[index]
                try:
                    ok, payload = ready.recv()  # type: ignore[union-attr]
                except (EOFError, OSError) as exc:
                    raise _lost(f"worker {self._procs[w].pid}: {exc!r}") from exc
                if not ok:
                    raise payload
                chunk = flying[w].popleft()
                if key:
                    for p in chunk:
                        self._owner[key(items[p])] = w
                hand(w)
                yield chunk, payload


def _chunked(positions: list[int], size: int) -> list[list[int]]:
    return [positions[k:k + size] for k in range(0, len(positions), size)]


def forked_chunks(work: Callable[[list[int]], list[_R]], total: int, jobs: int,
                  size: int) -> Iterator[tuple[list[int], list[_R]]]:
    """``(chunk, work(chunk))`` for the chunks of ``range(total)`` of ``size`` items, from
    ``jobs`` forked workers as each chunk completes (with ``jobs <= 1``, or inside another
    ``forked_chunks``: here, in order). A worker that dies mid-phase raises
    :class:`~derivgraph.errors.WorkerLost`; one that raises hands its error on as is."""
    with ForkedPool(work, jobs) as pool:
        yield from pool.map(range(total), size)
