"""scan34 (issue 21, the scan's CPU): the evidence phase hands a file's findings to one forked
worker (:func:`.forked.affinity_order`), so that the tables a file's findings build (its parsed
tree, its memos in the reader index) are built once, not in both workers.

* the order is a permutation that keeps each file's findings in one run (canary: the old
  every-n-th deal splits them);
* the judged findings are the same as in one process, in the input order (a small corpus
  judged by two forked workers against ``jobs=1``), and each file's are judged in one worker;
* a worker that raises hands its error to the caller as the same type; a worker killed
  mid-phase makes the phase fail at once with a DG error (``WorkerLost``), never hang.
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass, replace

import pytest

from derivgraph.audit.static import evidence
from derivgraph.audit.static.forked import affinity_order, forked_chunks
from derivgraph.audit.static.readers import ReaderIndex
from derivgraph.errors import PackageNotFound, WorkerLost


def _every_nth(keys: list[str], workers: int) -> list[int]:
    """29893d9's deal (kept as the canary)."""
    return [k for w in range(workers) for k in range(w, len(keys), workers)]


def _runs(order: list[int], workers: int) -> list[list[int]]:
    size = -(-len(order) // workers)
    return [order[k:k + size] for k in range(0, len(order), size)]


_KEYS = ["a", "b", "a", "c", "b", "a", "d", "c", "a", "b"]  # a: 4, b: 3, c: 2, d: 1


def _split_keys(order: list[int], keys: list[str], workers: int) -> set[str]:
    runs = [{keys[k] for k in run} for run in _runs(order, workers)]
    return {key for key in set(keys) if sum(key in run for run in runs) > 1}


def test_affinity_order_keeps_each_key_in_one_run() -> None:
    order = affinity_order(_KEYS, 2)
    assert sorted(order) == list(range(len(_KEYS)))  # a permutation
    # a (4) -> run 0, b (3) -> run 1, c (2) -> run 1, d (1) -> run 0: 5 and 5 items
    assert order == [0, 2, 5, 6, 8, 1, 3, 4, 7, 9]
    assert _split_keys(order, _KEYS, 2) == set()
    assert affinity_order(_KEYS, 1) == list(range(len(_KEYS)))  # one process: input order


def test_canary_every_nth_deal_splits_keys() -> None:
    assert _split_keys(_every_nth(_KEYS, 2), _KEYS, 2) == {"a", "b"}  # c: items 3 and 7


@dataclass(frozen=True)
class _Finding:
    file: str
    attr: str
    line: int
    judged_by: int = 0
    reader: str | None = None


_TEXTS = [(f"m{i}.py", f"class C{i}:\n    def f(self):\n        return op(self.w{i % 3})\n")
          for i in range(4)]


def _judge(f: _Finding) -> _Finding:
    index = {display: k for k, (display, _) in enumerate(_TEXTS)}[f.file]
    time.sleep(0.005)  # long enough that each worker takes one of the two chunks
    return replace(f, judged_by=os.getpid(), reader=f"{f.file}:{f.line} w{index % 3}")


def _todo() -> list[_Finding]:
    # 72 findings (enough for two workers: 32 each at least), 18 per file, in runs of three
    # interleaved as in a report (m0 m0 m0 m1 m1 m1 ... m3 m0 ...)
    return [_Finding(_TEXTS[k // 3 % 4][0], f"w{k % 3}", k) for k in range(72)]


def _index() -> ReaderIndex:
    return ReaderIndex(_TEXTS, (), lambda c: frozenset({c}))


def test_forked_judging_equals_one_process_and_keeps_a_file_in_one_worker() -> None:
    todo = _todo()
    one = evidence._judge_all(_judge, _index(), todo, jobs=1)
    two = evidence._judge_all(_judge, _index(), todo, jobs=2)
    assert [replace(f, judged_by=0) for f in two] == [replace(f, judged_by=0) for f in one]
    assert [f.line for f in two] == list(range(72))  # the input order
    assert two[7].reader == "m2.py:7 w2"
    assert {f.judged_by for f in one} == {os.getpid()}
    workers = {f.judged_by for f in two}
    assert len(workers) == 2 and os.getpid() not in workers
    per_file = {f.file: {g.judged_by for g in two if g.file == f.file} for f in two}
    assert all(len(pids) == 1 for pids in per_file.values()), per_file


def test_canary_every_nth_judging_spreads_files_over_workers(monkeypatch) -> None:
    monkeypatch.setattr(evidence, "affinity_order", _every_nth)
    two = evidence._judge_all(_judge, _index(), _todo(), jobs=2)
    spread = {f.file for f in two if len({g.judged_by for g in two if g.file == f.file}) > 1}
    assert spread == {display for display, _ in _TEXTS}


def _raise_in_worker(chunk: list[int]) -> list[int]:
    if 5 in chunk:
        raise PackageNotFound("planted in a worker")
    return chunk


def test_an_error_in_a_worker_reaches_the_caller_as_its_type() -> None:
    with pytest.raises(PackageNotFound, match="planted in a worker"):
        for _ in forked_chunks(_raise_in_worker, 40, jobs=2, size=4):
            pass


def _killed(chunk: list[int]) -> list[int]:
    if 5 in chunk:
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(0.01)
    return chunk


def test_a_killed_worker_fails_the_phase_without_hanging() -> None:
    start = time.monotonic()
    with pytest.raises(WorkerLost, match="--jobs 1"):
        for _ in forked_chunks(_killed, 40, jobs=2, size=4):
            pass
    assert time.monotonic() - start < 60


def test_the_cli_reports_a_dead_worker_as_one_dg_error(monkeypatch, tmp_path, capsys) -> None:
    from derivgraph.audit.static import scan as scan_module
    from derivgraph.cli import main

    def dead(*args, **kwargs):
        for _ in forked_chunks(_killed, 40, jobs=2, size=4):
            pass

    monkeypatch.setattr(scan_module, "scan", dead)
    (tmp_path / "m.py").write_text("x = 1\n")
    assert main(["audit", "static", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "a forked audit worker died mid-phase" in err and "--jobs 1" in err
    assert "Traceback" not in err
