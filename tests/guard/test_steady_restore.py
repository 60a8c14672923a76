"""The guard's steady restore entry (:mod:`derivgraph.guard.steady`) against the library's restore.

Twin models and guards, one restored with the entry on and one with it off (the library's path,
the reference), over a vLLM-like engine whose reload rebuilds the same objects (each ``weight``
re-registered after its ``bias``, a fresh closure per layer, a new derived tensor that a plan
puts back into the startup one): the tensors bit-identical, the reports and the state the
restore leaves equal, and the entry runs without the library's restore once made. One scenario
per check the entry makes falls back to the library's restore and matches the twin; the same
scenario with that check's line made ``if False:`` (its canary) goes wrong.
"""

from __future__ import annotations

import types
from typing import Any

import pytest
import torch
from torch import nn

from derivgraph import dict_slots
from derivgraph.dict_slots import DictSlots
from derivgraph.guard import Change, Guard, steady
from derivgraph.guard import sweep as sweep_module


class _Linear(nn.Module):
    def __init__(self, seed: int) -> None:
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.weight = nn.Parameter(torch.randn(3, 3, generator=g), requires_grad=False)
        self.bias = nn.Parameter(torch.zeros(3), requires_grad=False)
        self.tp_size = 1
        self.scratch: torch.Tensor | None = None

    def post_load(self, n: int) -> None:
        """vLLM's per-layer post-load step: a derived tensor, a fresh closure of one shape."""
        self.scratch = self.weight * n
        self.cpu_linear = lambda x, w, b: torch.nn.functional.linear(x, w, b) * n


class _Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.ModuleList([_Linear(i) for i in range(4)])
        self.meta = types.SimpleNamespace(n=1)  # an object off every chain: it held no tensor

    #: whether reload re-registers each weight (vLLM's; the moved entries make a dict's table
    #: compact every few reloads, and the raw-word proof then suspects other items once)
    move = True

    def reload(self, n: int) -> None:
        """vLLM's layerwise reload: each ``weight`` registered again after its ``bias`` (its
        entry moves), every layer's post-load step, then a plan's refill: each derived value
        copied into the startup tensor, which is put back where the engine put its own."""
        kept = [layer.scratch for layer in self.layers]
        for layer in self.layers:
            if self.move:
                weight = layer._parameters.pop("weight")
                layer._parameters["weight"] = weight
            layer.post_load(n)
        for layer, startup in zip(self.layers, kept):
            startup.copy_(layer.scratch)
            layer.scratch = startup


SLOW: list[Guard] = []


@pytest.fixture(autouse=True)
def counted(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every library restore recorded (patched before any entry binds it)."""
    SLOW.clear()
    slow = Guard._restore_slow

    def restore_slow(self: Guard, *a: Any, **k: Any) -> Any:
        SLOW.append(self)
        return slow(self, *a, **k)

    monkeypatch.setattr(Guard, "_restore_slow", restore_slow)


@pytest.fixture
def whole(version_tags: bool) -> None:
    if sweep_module.WHOLE_ITEMS == 0 or not dict_slots.AVAILABLE:
        pytest.skip("the entry covers the sweep that proves every item by its raw words")


def _startup() -> tuple[_Model, Guard]:
    model = _Model()
    for layer in model.layers:
        layer.post_load(2)
    guard = Guard()
    guard.snapshot(model)
    return model, guard


def _restore(monkeypatch: pytest.MonkeyPatch, guard: Guard, model: _Model, on: bool,
             **kw: Any) -> dict[str, Any]:
    monkeypatch.setattr(steady, "ENABLED", on)
    report = guard.restore(model, **kw).as_dict()
    monkeypatch.setattr(steady, "ENABLED", True)
    report.pop("seconds")
    return report


def _state(model: _Model, guard: Guard) -> dict[str, Any]:
    """The tensors (as bytes), which holders hold the startup tensors, and the guard's state."""
    sweep = guard.watch.sweep
    gather = sweep.gathers.get(sweep.whole)
    tensors = {k: v.view(-1).view(torch.uint8).tolist() for k, v in model.state_dict().items()}
    tensors.update({f"layers.{i}.scratch": layer.scratch.view(-1).view(torch.uint8).tolist()
                    for i, layer in enumerate(model.layers)})
    return {"tensors": tensors, "restores": guard.restores, "claimed": guard._claimed,
            "held": [layer.scratch is guard.paths[f"layers.{i}.scratch"].tensor
                     and layer.scratch.data_ptr() == guard.paths[f"layers.{i}.scratch"].data_ptr
                     for i, layer in enumerate(model.layers)],
            # the sweep's state by container (the order the watch made them; address order
            # differs between twins): lengths, re-bases, gathers, the suspects' columns
            "lens": [sweep.lens[sweep.position[i]] for i in range(len(sweep.live))],
            "grows": sweep.grows, "gathers": len(sweep.gathers),
            "columns": None if gather is None else sorted(
                (sweep.acc_container[gather.acc[j]], gather.acc_keys[j])
                for j in gather.columns[0])}


def _twins(monkeypatch: pytest.MonkeyPatch, move: bool = True,
           ) -> tuple[tuple[_Model, Guard], tuple[_Model, Guard]]:
    """Two startups reloaded alike until the entry ran twice in a row (the raw-word proof's
    suspects settle after a few reloads; while they change, the entry falls back)."""
    fast, ref = _startup(), _startup()
    fast[0].move = ref[0].move = move
    ran = 0
    for n in range(3, 23):
        SLOW.clear()
        for (model, guard), on in ((fast, True), (ref, False)):
            model.reload(n)
            assert _restore(monkeypatch, guard, model, on) == _restore_report_of(guard)
        ran = 0 if fast[1] in SLOW else ran + 1
        if ran == 2:
            break
    assert ran == 2, "the entry never ran twice in a row"
    assert fast[1]._steady is not None and ref[1]._steady is None  # (made only while on)
    assert _state(*fast) == _state(*ref)
    return fast, ref


def _restore_report_of(guard: Guard) -> dict[str, Any]:
    """A steady restore's report: nothing restored, nothing to recapture."""
    return {"guarded": len(guard.guarded()), "weights": 8, "restored": [], "copied_only": [],
            "recapture": []}


def test_steady_reloads_run_the_entry_and_match_the_library(whole, monkeypatch) -> None:
    (model, guard), (twin, reference) = _twins(monkeypatch)
    ran = 0
    for n in range(30, 42):
        model.reload(n)
        twin.reload(n)
        columns = _state(model, guard)["columns"]
        SLOW.clear()
        got = _restore(monkeypatch, guard, model, True)
        fell_back = guard in SLOW
        ran += not fell_back
        expected = _restore(monkeypatch, reference, twin, False)
        assert got == expected == _restore_report_of(guard)
        state = _state(model, guard)
        assert state == _state(twin, reference)
        assert all(state["held"])
        # the entry falls back exactly where the proof suspects other items than last time
        assert fell_back == (state["columns"] != columns)
        torch.testing.assert_close(model.layers[3].scratch, model.layers[3].weight * n,
                                   rtol=0, atol=0)
    assert ran >= 6, ran


def test_source_is_what_runs(whole, monkeypatch) -> None:
    (model, guard), (twin, reference) = _twins(monkeypatch, move=False)
    text = guard.source()
    assert text.startswith("# The guard's steady restore entry")
    fn = guard._steady.fn
    code = "".join(__import__("linecache").getlines(fn.__code__.co_filename))
    assert text.endswith(code) and code.startswith("def restore_steady(")
    scope = dict(fn.__globals__)
    exec(compile(text, "<printed>", "exec"), scope)  # noqa: S102 - the printed text itself
    model.reload(5)
    twin.reload(5)
    SLOW.clear()
    got = scope["restore_steady"](model).as_dict()
    got.pop("seconds")
    assert not SLOW
    assert got == _restore(monkeypatch, reference, twin, False)
    assert _state(model, guard) == _state(twin, reference)
    monkeypatch.setattr(steady, "ENABLED", False)
    assert guard.source().startswith("# no steady restore entry")


def test_no_entry_outside_the_whole_proof(version_tags, monkeypatch) -> None:
    if sweep_module.WHOLE_ITEMS and dict_slots.AVAILABLE:
        pytest.skip("the tag and plain sweeps only")
    model, guard = _startup()
    for n in (3, 4):
        model.reload(n)
        assert _restore(monkeypatch, guard, model, True) == _restore_report_of(guard)
    assert guard._steady is None and guard.source().startswith("# no steady restore entry")


# ---- one scenario per check: the entry falls back, and its canary goes wrong ------------------

def _full(model: _Model) -> dict[str, Any]:
    model.meta.t = torch.ones(2)  # a new tensor on an object off every chain: full's walk only
    return {"full": True}


def _resized(model: _Model) -> dict[str, Any]:
    model.layers[2].extra = torch.ones(2)  # a new key: the dict's length
    return {}


def _unproven(model: _Model) -> dict[str, Any]:
    model.layers[2].tp_size = torch.zeros(2)  # found only by reading every item
    return {}


def _other_suspects(model: _Model) -> dict[str, Any]:
    model.layers[2].tp_size = torch.zeros(2)  # a tensor over an int: a new suspect
    return {}


def _not_harmless(model: _Model) -> dict[str, Any]:
    model.layers[2].cpu_linear = torch.ones(1)  # suspected every reload; now holds a tensor
    return {}


def _repointed(model: _Model) -> dict[str, Any]:
    model.layers[1].scratch.data = torch.zeros(3, 3)  # the startup tensor at other storage
    return {}


#: scenario, the check's line in the generated body and its replacement, what the library finds
SCENARIOS = {
    "key": (_full, "if (full or guard.watch is not watch",
            "if False and (full or guard.watch is not watch", ("meta.t", Change.NEW)),
    "lengths": (_resized, "if slots.resized:", "if False:",
                ("layers.2.extra", Change.NEW)),
    "proof": (_unproven, "if suspects is None:", "if False:", ("layers.2.tp_size", Change.NEW)),
    "suspects": (_other_suspects, "    if suspects is not columns[0]:", "    if False:",
                 ("layers.2.tp_size", Change.NEW)),
    "template": (_not_harmless, "        if template is None or not harmless(", "        if False:",
                 ("layers.2.cpu_linear", Change.NEW)),
    "storage": (_repointed, "if not storage_kept and not at.intact():", "if False:",
                ("layers.1.scratch", None)),
}


def _scenario(monkeypatch: pytest.MonkeyPatch, name: str, canary: bool) -> tuple[Any, ...]:
    change, line, replacement, _ = SCENARIOS[name]
    # no weight re-registered: the proof suspects the same items (the closures) every reload
    (model, guard), (twin, reference) = _twins(monkeypatch, move=False)
    if canary:  # the same entry with this check's line made `if False:`
        # (a replacement ending in ":" is the whole line; else it replaces the line's start)
        body = [(replacement if replacement.endswith(":") else replacement + b[len(line):])
                if b.startswith(line) else b for b in steady._BODY]
        assert body != steady._BODY
        monkeypatch.setattr(steady, "_BODY", body)
        guard._steady_for = ()
        guard._make_steady()
    model.reload(5)
    twin.reload(5)
    kw = change(model)
    assert change(twin) == kw
    if name == "proof":  # the raw words prove nothing (tables kept being replaced)
        monkeypatch.setattr(DictSlots, "suspects", lambda self: None)
    SLOW.clear()
    got = _restore(monkeypatch, guard, model, True, **kw)
    fell_back = guard in SLOW
    expected = _restore(monkeypatch, reference, twin, False, **kw)
    return got, expected, fell_back, _state(model, guard), _state(twin, reference)


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_each_check_falls_back_to_the_library(whole, monkeypatch, name: str) -> None:
    got, expected, fell_back, state, twin_state = _scenario(monkeypatch, name, canary=False)
    path, change = SCENARIOS[name][3]
    assert fell_back
    assert got == expected
    assert state == twin_state
    if change is None:  # re-pointed: copied back into the startup storage, pointed at it again
        assert any(path in c for c in got["restored"]) and all(state["held"]), got
    else:
        assert any(path in c for c in got["recapture"]), got


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_each_check_s_canary_goes_wrong(whole, monkeypatch, name: str) -> None:
    got, expected, fell_back, state, twin_state = _scenario(monkeypatch, name, canary=True)
    path, change = SCENARIOS[name][3]
    assert not fell_back  # the entry answered: the steady state's report
    assert got == _restore_report_of_state(expected)
    assert got != expected
    if change is None:
        assert not state["held"][1] and twin_state["held"][1]  # left at the other storage
    else:
        assert not any(path in c for c in got["recapture"])


def _restore_report_of_state(expected: dict[str, Any]) -> dict[str, Any]:
    return {**expected, "restored": [], "copied_only": [], "recapture": []}
