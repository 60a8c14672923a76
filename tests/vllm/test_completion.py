"""The reload completion's fast paths: findings assembled whenever a check can find something,
the last-reload record built when read, and a checkpoint-format ``reload_weights`` recording
its weights once (the model's live ``load_weights`` passes them through)."""

from __future__ import annotations

import itertools
import logging
from types import SimpleNamespace

import pytest

from derivgraph.runtime.report import RunReport
from vllm_integration import completion
from vllm_integration.completion import Counters, complete, strict_findings
from vllm_integration.snapshot import AuditResult

_REASON = SimpleNamespace(reason=lambda: "why")


def _inputs(moved, undeclared, unrefreshed, watched_scalar, mismatch, recapture, watch):
    result = AuditResult(["a.moved"] if moved else [], ["a.new"] if undeclared else [])
    found = None
    if watch:
        found = SimpleNamespace(
            unrefreshed=[SimpleNamespace(path="a.stale", reason=lambda: "why")] if unrefreshed
            else [],
            scalars=[SimpleNamespace(path="a.f", before=1.0, after=2.0)] if watched_scalar
            else [])
    specs = SimpleNamespace(mismatches=[SimpleNamespace(path="a.m", reason=lambda: "why")]) \
        if mismatch else None
    report = RunReport(recapture_required=["a.s"] if recapture else [])
    return result, found, report, specs


def test_findings_are_assembled_whenever_any_check_found_something():
    """Every combination of the checks' inputs: the fast path's guard (``_anything``) is True
    whenever :func:`strict_findings` has a line; a planted guard that ignores one input fails
    here (the canary is the single-input rows)."""
    seen = 0
    for flags in itertools.product([False, True], repeat=7):
        *checks, watch = flags
        if not watch and (checks[2] or checks[3]):
            continue  # the stale and watched-scalar findings come from the strict watch only
        result, found, report, specs = _inputs(*flags)
        lines = strict_findings(result, found, report, specs)
        assert bool(lines) == any(checks), flags
        if lines:
            assert completion._anything(result, found, report, specs), flags
            seen += 1
    assert seen > 20
    assert not completion._anything(*_inputs(*[False] * 7))


class _Plan:
    """A plan whose refill reports what a test plants."""

    folds = None

    def __init__(self, report: RunReport):
        self.report = report

    def __len__(self) -> int:
        return 1

    def refill(self, *, verify: bool = False, after: object = None) -> RunReport:
        assert verify and after is None  # no guard: nothing passed for the last check
        return self.report

    def declared(self) -> dict:
        return {}


def _complete(report: RunReport, mode: str = "refill") -> Counters:
    state = SimpleNamespace(plan=_Plan(report), counters=Counters(), witness=None, guard=None)
    session = SimpleNamespace(kind="checkpoint-format", layerwise=True, watch=None, before=None,
                              names={"w"}, runtime_names=set())
    complete(object(), state, session, mode, lambda: None)
    return state.counters


def test_a_refill_that_moved_or_changed_a_scalar_is_still_reported(caplog):
    with caplog.at_level(logging.WARNING):
        counters = _complete(RunReport(mode="refill", moved=["x.w"],
                                       recapture_required=["x.scale_float"]))
    assert counters.moved_last == 1 and counters.scalars_changed_last == 1
    text = [r.getMessage() for r in caplog.records]
    assert any("moved in the checkpoint-format reload: x.w" in t for t in text)
    assert any("Python scalar(s)" in t and "x.scale_float" in t for t in text)


def test_a_clean_refill_reports_nothing(caplog):
    with caplog.at_level(logging.WARNING):
        counters = _complete(RunReport(mode="refill", moved=[], written=3))
    assert counters.moved_last == counters.scalars_changed_last == 0
    assert counters.refills == counters.reloads == 1 and counters.tensors_written == 3
    assert caplog.records == []


def test_clean_and_moved_reloads_in_turn_keep_their_own_findings(monkeypatch):
    """A clean reload shares one read-only empty result; a reload that moved something gets its
    own. A planted completion that writes the moved paths into the shared result makes the next
    clean reload report them (the canary)."""
    plan = _Plan(RunReport(mode="refill", moved=[]))
    state = SimpleNamespace(plan=plan, counters=Counters(), witness=None, guard=None)
    session = SimpleNamespace(kind="checkpoint-format", layerwise=True, watch=None, before=None,
                              names={"w"}, runtime_names=set())

    def run(moved: list[str]) -> int:
        plan.report = RunReport(mode="refill", moved=moved)
        complete(object(), state, session, "refill", lambda: None)
        return state.counters.moved_last

    def polluting(moved: list[str], clean: AuditResult = completion._CLEAN) -> AuditResult:
        clean.moved.extend(moved)
        return clean

    for planted in (False, True):
        if planted:
            monkeypatch.setattr(completion, "AuditResult", polluting)
        seen = [run([]), run(["x.w"]), run([])]
        assert (seen == [0, 1, 0]) is not planted, seen
    monkeypatch.undo()
    completion._CLEAN.moved.clear()  # the canary's pollution, not the fixed code's


def test_the_last_record_describes_its_own_reload_when_read_later():
    first = RunReport(mode="refill", moved=[], written=3)
    counters = _complete(first)
    last = counters.last
    assert last == {"session": "checkpoint-format", "mode": "refill", "layerwise": True,
                    "loaded_names": 1, "report": first.as_dict(), "strict": None,
                    "spec_values": None, "guard": None}
    assert counters.last is last  # built once
    data = counters.as_dict()
    assert data["last"] == last and data["reloads"] == 1 and "_last" not in data
    data["last"]["report"]["written"] = 99  # a copy: the record keeps its values
    assert counters.last["report"]["written"] == 3
    counters.last = None
    assert counters.last is None and counters.as_dict()["last"] is None


# ---- through vLLM's real reload_weights ----------------------------------------------------

def _vllm():
    pytest.importorskip("vllm")
    from tests.fixtures import vllm_models as vm
    from vllm_integration import session

    return vm, session


def _reload(vm, model, weights):  # noqa: ANN001 - checkpoint format (layerwise)
    from vllm.model_executor.model_loader.reload import inplace

    inplace.reload_weights(vm.VLLM_CONFIG, model, weights, None, True)


@pytest.mark.vllm
def test_a_checkpoint_reload_records_each_weight_once(monkeypatch):
    vm, session = _vllm()
    B = vm.checkpoint(1)
    notes: list[tuple[list[str], bool]] = []
    note = session.note_names
    monkeypatch.setattr(session, "note_names",
                        lambda model, names, *, runtime: notes.append((list(names), runtime))
                        or note(model, names, runtime=runtime))
    with vm.derivgraph_hooks(mode="refill"):
        model = vm.build(vm.checkpoint(0))
        state = session.state_for(model)
        _reload(vm, model, iter(B.items()))
        assert state.session is None and state.counters.reloads == 1
        assert notes == [(list(B), False)]  # the live load_weights passed the weights through
        assert state.counters.last["loaded_names"] == len(B)
        assert state.counters.last["report"]["moved"] == []
        # canary: outside a reload the live load_weights still opens its own session (the
        # per-expert input scales, reduced by the post-load step, load only in a reload)
        model.load_weights([(n, t) for n, t in B.items() if "input_scale" not in n])
        assert state.counters.reloads == 2 and state.counters.last["session"] == "load-weights"


@pytest.mark.vllm
def test_a_load_failing_inside_a_recorded_reload_drops_the_session():
    vm, session = _vllm()
    B = vm.checkpoint(1)

    def failing():
        yield from list(B.items())[:2]
        raise OSError("the checkpoint read failed")

    with vm.derivgraph_hooks(mode="refill"):
        model = vm.build(vm.checkpoint(0))
        state = session.state_for(model)
        with pytest.raises(OSError):
            _reload(vm, model, failing())
        assert state.session is None and state.counters.reloads == 0
        _reload(vm, model, iter(B.items()))  # the next reload completes as usual
        assert state.counters.reloads == 1 and state.counters.last["report"]["moved"] == []


def test_switches_are_read_on_every_call(monkeypatch):
    from vllm_integration.config import MODE_ENV, current_mode, env_flag

    for raw, flag in [("1", True), (" Yes", True), ("on", True), ("0", False), ("OFF", False),
                      ("no", False), ("", None), ("maybe", None)]:
        monkeypatch.setenv("DG_TEST_FLAG", raw)
        assert env_flag("DG_TEST_FLAG") is flag, raw
    monkeypatch.delenv("DG_TEST_FLAG")
    assert env_flag("DG_TEST_FLAG") is None
    # each raw mode is parsed once, and a changed value is seen at once (the canary of a cache
    # that would keep the first mode it read)
    for raw, mode in [("strict", "strict"), ("refill", "refill"), (" Strict ", "strict"),
                      ("", "refill"), ("off", "off")]:
        monkeypatch.setenv(MODE_ENV, raw)
        assert current_mode() == mode and current_mode() == mode
    monkeypatch.setenv(MODE_ENV, "sometimes")
    for _ in range(2):  # an invalid value is never cached
        with pytest.raises(ValueError, match="sometimes"):
            current_mode()
    monkeypatch.setenv(completion.VERIFY_SPECS_ENV, "0")
    assert not completion.verify_specs_enabled("strict")
    monkeypatch.delenv(completion.VERIFY_SPECS_ENV)
    assert completion.verify_specs_enabled("strict") and not completion.verify_specs_enabled("off")
    monkeypatch.setenv(completion.ALLOW_RECAPTURE_ENV, "true")
    assert completion.recapture_allowed()


def test_the_environment_reader_sees_every_write(monkeypatch):
    """:func:`~vllm_integration.config.environ_value` reads the environment mapping's own dict:
    it answers as ``os.environ.get`` after every kind of write, and reads a stand-in that
    replaced ``os.environ``; a planted reader that keeps its first answer fails here."""
    import os

    from vllm_integration import config

    name = "DG_TEST_READER"
    monkeypatch.delenv(name, raising=False)
    writes = [lambda: os.environ.__setitem__(name, "strict"),
              lambda: os.environ.update({name: "off"}),
              lambda: os.environ.__setitem__(name, "caf\u00e9 \udcff"),  # non-ASCII, undecodable
              lambda: os.environ.pop(name),
              lambda: os.environ.setdefault(name, "refill"),
              lambda: os.environ.__delitem__(name)]

    def kept_first(read):  # the canary: a reader that caches by name
        seen: dict[str, str] = {}
        return lambda n: seen.setdefault(n, read(n))

    for reader, planted in [(config.environ_value, False), (kept_first(config.environ_value),
                                                            True)]:
        answers = []
        for write in writes:
            write()
            answers.append(reader(name) == os.environ.get(name, ""))
        assert all(answers) is not planted
    monkeypatch.setattr(os, "environ", {name: "recompute"})  # replaced wholesale
    assert config.environ_value(name) == "recompute" and config.current_mode() == "refill"
    monkeypatch.setitem(os.environ, config.MODE_ENV, "strict")
    assert config.current_mode() == "strict"
