"""scan44: the rounds' workers are kept across the rounds (:class:`.forked.ForkedPool`), a
file audited again goes to the worker that had it, and the blocks it parsed then are reused
(:class:`.segments.BlockParses`): the same answers as fresh workers and fresh parses."""

from __future__ import annotations

import os
import shutil
import time

import pytest

from derivgraph.audit.static import scan as scan_module
from derivgraph.audit.static.forked import ForkedPool
from derivgraph.audit.static.module import ExternalRoot, ModuleContext, audit_module
from derivgraph.audit.static.scan import scan
from derivgraph.audit.static.segments import BlockParses
from derivgraph.errors import PackageNotFound
from tests.audit.static.expectations import CORPUS

_CALLS = [0]  # work calls made by this process (each worker counts its own)


def _pid_and_call(items: list[int]) -> list[tuple[int, int, int]]:
    _CALLS[0] += 1
    time.sleep(0.02)
    return [(item, os.getpid(), _CALLS[0]) for item in items]


def _map(pool: ForkedPool[int, tuple[int, int, int]], items: list[int],
         keyed: bool) -> dict[int, tuple[int, int]]:
    """item -> (worker pid, that worker's work call number)."""
    out = {}
    for _, results in pool.map(items, 1, key=(lambda item: item) if keyed else None):
        out.update({item: (pid, call) for item, pid, call in results})
    return out


def _first_calls_own_keys(keyed: bool) -> bool:
    """Map 0..3 once (the pool hands item 0 to one worker and 1 to the other before any
    other), then 1, 0, 3, 2: whether each worker's first call of the second map was an item
    it had in the first."""
    with ForkedPool(_pid_and_call, 2) as pool:
        first = _map(pool, [0, 1, 2, 3], keyed=True)
        second = _map(pool, [1, 0, 3, 2], keyed=keyed)
    assert {pid for pid, _ in first.values()} == {pid for pid, _ in second.values()}
    assert os.getpid() not in {pid for pid, _ in first.values()}
    calls = {pid: max(c for p, c in first.values() if p == pid) for pid, _ in first.values()}
    return all(first[item][0] == pid for item, (pid, call) in second.items()
               if call == calls[pid] + 1)


def test_a_keyed_map_hands_each_key_to_the_worker_that_had_it() -> None:
    assert _first_calls_own_keys(keyed=True)


def test_canary_an_unkeyed_map_hands_keys_to_the_other_worker() -> None:
    assert not _first_calls_own_keys(keyed=False)


def test_a_pool_keeps_its_workers_until_it_closes() -> None:
    with ForkedPool(_pid_and_call, 2) as pool:
        first = {pid for pid, _ in _map(pool, list(range(6)), keyed=False).values()}
        second = {pid for pid, _ in _map(pool, list(range(6)), keyed=False).values()}
        assert first == second and len(first) == 2
    for pid in first:  # joined: gone
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def _raise_on_three(items: list[int]) -> list[int]:
    if 3 in items:
        raise PackageNotFound("planted in a pool worker")
    return items


def test_an_error_in_a_later_map_reaches_the_caller_and_closes_the_pool() -> None:
    with pytest.raises(PackageNotFound, match="planted in a pool worker"), \
            ForkedPool(_raise_on_three, 2) as pool:
        assert sorted(i for chunk, _ in pool.map([0, 1, 2], 1) for i in chunk) == [0, 1, 2]
        for _ in pool.map([2, 3, 4], 1):
            pass


def test_one_worker_or_a_nested_pool_maps_here_in_order() -> None:
    with ForkedPool(_pid_and_call, 1) as pool:
        got = [r for _, res in pool.map([5, 6, 7], 2) for r in res]
    assert [(item, pid) for item, pid, _ in got] == [(5, os.getpid()), (6, os.getpid()),
                                                      (7, os.getpid())]


_TEXT = '''import torch


class Experts:
    def process_weights_after_loading(self, layer):
        self.scale = layer.weight.abs().max()
        helper(layer)

    def swap(self, layer):
        self.flat = layer.weight.flatten().clone()


def helper(layer):
    layer.packed = layer.weight.t().contiguous()
'''


def _audit(text: str, name: str, parses: BlockParses | None,
           extra: tuple[ExternalRoot, ...] = ()) -> tuple[object, ...]:
    sites, externals, reach = audit_module(text, name, "pkg.m", False, ModuleContext({}, {}),
                                           extra=extra, parses=parses)
    return tuple(sites), tuple(externals), tuple(reach)


def test_kept_parses_give_the_audits_of_fresh_parses() -> None:
    again = (ExternalRoot(0, "Experts", "swap", ("caller",), frozenset({"Experts"})),)
    parses = BlockParses()
    kept_first = _audit(_TEXT, "m.py", parses)
    bodies = dict(parses.bodies)
    kept_again = _audit(_TEXT, "m.py", parses, again)
    assert kept_first == _audit(_TEXT, "m.py", None)
    assert kept_again == _audit(_TEXT, "m.py", None, again)
    assert kept_again[0] and {s.attr for s in kept_again[0]} == {"flat"}
    # the second audit reused the first one's import block and helper, parsed once
    reused = [key for key in bodies if parses.bodies[key] is bodies[key]]
    assert any("import torch" in source for _, _, source in reused)


def test_a_kept_parse_serves_only_its_own_line_and_file() -> None:
    """The key holds the block's line and file name: the same text lower in another file
    gives that file's lines (a key of the text alone would hand back the first lines)."""
    parses = BlockParses()
    first, _, _ = _audit(_TEXT, "a.py", parses)
    lower, _, _ = _audit("\n\n\n" + _TEXT, "b.py", parses)
    assert [s.line + 3 for s in first] == [s.line for s in lower] and first
    assert all(s.line > 3 for s in lower)


def _count_pools(monkeypatch) -> list[int]:
    """Patch the scan's pool to note, per pool entered, how many workers it forked."""
    forked: list[int] = []

    class Spy(ForkedPool):  # type: ignore[type-arg]
        def __enter__(self):  # type: ignore[no-untyped-def]
            pool = super().__enter__()
            forked.append(len(self._procs))
            return pool

    monkeypatch.setattr(scan_module, "ForkedPool", Spy)
    return forked


def test_the_scan_with_kept_workers_equals_one_process(tmp_path, monkeypatch) -> None:
    """Three copies of the corpus (enough files for two workers): the rounds in one pool of
    forked workers give the findings of one process."""
    for part in "abc":
        shutil.copytree(CORPUS, tmp_path / part)
    one = scan([tmp_path], specs=[], jobs=1)
    forked = _count_pools(monkeypatch)
    two = scan([tmp_path], specs=[], jobs=2)
    assert forked == [2]  # one pool for all the rounds
    assert [f.__dict__ for f in two.findings] == [f.__dict__ for f in one.findings]
    assert len(one.findings) > 30


def test_the_default_jobs_turn_to_one_process_on_a_contended_host() -> None:
    assert scan_module.jobs_after_tree_facts(None, 2, 0.95) == 1
    assert scan_module.jobs_after_tree_facts(None, 2, 1.8) is None  # unloaded: workers
    assert scan_module.jobs_after_tree_facts(None, 1, 0.5) is None  # no workers measured
    assert scan_module.jobs_after_tree_facts(2, 2, 0.95) == 2  # asked for: kept


def _rounds_forked(tmp_path, monkeypatch, cores: float) -> tuple[list[int], list[dict]]:
    """Workers forked for the rounds and the findings of a default-jobs scan of nine copies
    of the corpus (enough files for forked tree facts) where the tree facts used ``cores``."""
    for part in "abcdefghi":
        shutil.copytree(CORPUS, tmp_path / part)
    forked = _count_pools(monkeypatch)
    monkeypatch.setattr(scan_module.CoresUsed, "cores", lambda self: cores)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    report = scan([tmp_path], specs=[], jobs=None)
    return forked, [f.__dict__ for f in report.findings]


def test_a_contended_default_scan_runs_its_rounds_here(tmp_path, monkeypatch) -> None:
    forked, findings = _rounds_forked(tmp_path, monkeypatch, 1.0)
    assert forked == []
    assert findings == [f.__dict__ for f in scan([tmp_path], specs=[], jobs=1).findings]


def test_canary_an_unloaded_default_scan_forks_its_rounds(tmp_path, monkeypatch) -> None:
    forked, findings = _rounds_forked(tmp_path, monkeypatch, 1.8)
    assert forked == [2] and findings
