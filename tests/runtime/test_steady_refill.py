"""The steady refill entry (:mod:`derivgraph.runtime.steady`) against the slow path.

The oracle: two twin models, one refilled with the steady entry on, one with it off
(``steady.ENABLED = False``: :meth:`Plan.run`'s refill), driven identically: every derived
tensor bit-identical, every holder holding the same (startup or not) object, the reports equal
(but ``seconds``), the holder state the run leaves equal. The engine of the steady state
rebuilds the same holders every reload (one layer's post-load step). Each check before the
first write has a scenario that breaks its precondition, and a canary: the same scenario with
that check's ``if`` made never true goes wrong (so the scenario exercises that check).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest
import torch
from torch import nn

from derivgraph import DerivedTensor, Spec, compile_plan
from derivgraph.addresses import AtAddresses
from derivgraph.runtime import steady
from derivgraph.runtime.plan import Plan
from tests.runtime.test_refill_batched import SPEC, Layer, Stack

STEADY_LAYER = 1  # the layer whose post-load step the engine reruns every reload
#: SPEC with a derived Python scalar (its stage compared, its holder checked by the entry)
SCALAR_SPEC = Spec(name="layer", target=SPEC.target, derived=[
    *SPEC.derived, DerivedTensor(name="smax", kind="scalar", formula="amax(scale)")])


def _twin(spec: Spec = SPEC) -> tuple[Stack, Plan, dict[str, torch.Tensor]]:
    model = Stack()
    model.load(0)
    model.post_load()
    plan = compile_plan(model, [spec])
    return model, plan, {k: e.storage for k, e in plan.entries.items()
                         if isinstance(e.storage, torch.Tensor)}


def _engine(model: Stack, seed: int) -> None:
    """The steady engine: new weights, one layer's holders rebuilt."""
    model.load(seed)
    model.layers[STEADY_LAYER].post_load()


def _state(plan: Plan, report: Any) -> dict[str, Any]:
    """The holder state a refill leaves that later runs read, relative to its report."""
    h = plan.holders

    def rel(x: Any) -> Any:
        if isinstance(x, tuple):
            return tuple(map(rel, x))
        return "report" if x is report else None if x is None else type(x).__name__
    return {"rebound": rel(h._rebound), "sources": rel(h._sources_checked),
            "startup": rel(h.startup_checked), "after": rel(h.after_checked),
            "owners": rel(h._owners_checked), "read": rel(h._read),
            "at_startup": plan.tensors.at_startup, "constants": plan._constants_from_engine,
            "last_take": (rel(plan._last_take[0]), plan._last_take[1])}


def _outcome(model: Stack, plan: Plan, startup: dict[str, torch.Tensor], report: Any) \
        -> tuple[Any, ...]:
    fields = report.as_dict()
    fields.pop("seconds")
    values = {k: e.storage.clone() if isinstance(e.storage, torch.Tensor) else
              torch.tensor(e.storage, dtype=torch.float64) for k, e in plan.entries.items()}
    scalars = {k: getattr(model.get_submodule(k.rpartition(".")[0]), k.rpartition(".")[2])
               for k, e in plan.entries.items() if not isinstance(e.storage, torch.Tensor)}
    held = {k: plan.holders.model.get_submodule(k.rpartition(".")[0]).__dict__.get(
        "_parameters", {}).get(k.rpartition(".")[2], getattr(
            model.get_submodule(k.rpartition(".")[0]), k.rpartition(".")[2])) is t
        for k, t in startup.items()}
    return values, held, fields, _state(plan, report), scalars


def _same(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    def bits(t: torch.Tensor) -> torch.Tensor:
        return t.reshape(-1).view(torch.uint8)
    values = a[0].keys() == b[0].keys() and all(
        torch.equal(bits(a[0][k]), bits(b[0][k])) for k in a[0])
    return values and a[1:] == b[1:]


class Twins:
    """A model refilled by the steady entry and its twin refilled by the slow path."""

    def __init__(self, spec: Spec = SPEC) -> None:
        self.fast, self.slow = _twin(spec), _twin(spec)
        self.runs: list[int] = []

    def refill(self, engine: Callable[[Stack, int], None], seed: int, *, verify: bool = True,
               grad: bool = False) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        out = []
        for (model, plan, startup), on in ((self.fast, True), (self.slow, False)):
            engine(model, seed)
            steady.ENABLED = on
            try:
                with torch.set_grad_enabled(grad):
                    report = plan.refill(verify=verify)
            finally:
                steady.ENABLED = True
            out.append(_outcome(model, plan, startup, report))
        return out[0], out[1]

    def steady(self) -> None:
        """Two refills of the steady engine: the steady entry is made after the second."""
        for seed in (1, 2):
            fast, slow = self.refill(_engine, seed)
            assert _same(fast, slow)
        assert self.fast[1]._steady is not None


@pytest.fixture(params=["tensors", "with a scalar"])
def twins(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> Twins:
    t = Twins(SPEC if request.param == "tensors" else SCALAR_SPEC)
    t.steady()
    run = Plan.run

    def counted(self: Plan, *a: Any, **k: Any) -> Any:
        if self is t.fast[1]:
            t.runs.append(1)
        return run(self, *a, **k)

    monkeypatch.setattr(Plan, "run", counted)
    return t


@pytest.mark.parametrize("verify", [True, False])
@pytest.mark.parametrize("grad", [False, True])
def test_the_steady_entry_matches_the_slow_path(twins: Twins, verify: bool, grad: bool):
    for seed in (3, 4, 3, 5):
        fast, slow = twins.refill(_engine, seed, verify=verify, grad=grad)
        assert _same(fast, slow)
        assert fast[2]["taken_from_engine"] == 4 and fast[2]["rebinds"] == 4
        assert fast[2]["moved"] == ([] if verify else None)
        assert all(fast[1].values())  # every holder holds the startup tensor
    assert twins.runs == []  # the steady entry ran every time, never the slow path
    cold = Stack()
    cold.load(5)
    cold.post_load()
    model, plan, startup = twins.fast
    for i, layer in enumerate(cold.layers):  # and the values are a cold start's
        for name in ("inv", "sq", "wt", "strides"):
            assert torch.equal(startup[f"layers.{i}.{name}"], getattr(layer, name))


def test_the_printed_steady_entry_is_the_code_that_runs(twins: Twins):
    model, plan, _ = twins.fast
    text = plan.source("refill")
    fn = plan._steady.fn
    assert text.startswith("# The steady refill entry")
    assert fn.__code__.co_filename.startswith("<derivgraph refill_steady")
    import linecache
    ran = "".join(linecache.getlines(fn.__code__.co_filename))
    assert ran in text  # the function's own source, as compiled, is printed
    assert "def refill(report):" in text  # then the slow entry it falls back to
    assert "def partial_pass" in text
    # the partial pass printed is the one the entry calls, carried on its Program
    (rest,) = plan._steady.calls
    assert fn.__globals__[rest.name] is rest.fn and rest.source in text
    # canary: the pass printed is the Program's, not found in the function's globals
    entry = plan._steady
    plan._steady = dataclasses.replace(entry, calls=())
    assert "def partial_pass" not in plan.source("refill")
    plan._steady = entry
    # executing the printed function's text in a copy of its globals refills the same way
    scope = dict(fn.__globals__)
    exec(compile(ran, "<printed>", "exec"), scope)  # noqa: S102 - the printed text
    plan._steady = dataclasses.replace(plan._steady, fn=scope["refill_steady"])
    fast, slow = twins.refill(_engine, 7)
    assert _same(fast, slow) and twins.runs == []


def _scalar_rewritten(model: Stack, seed: int) -> None:
    """The engine also rewrote a derived scalar's holder (the library's rebind decides)."""
    _engine(model, seed)
    model.layers[0].smax = -1.0


def test_a_changed_scalar_and_a_rewritten_scalar_holder_match_the_slow_path(
        monkeypatch: pytest.MonkeyPatch):
    twins = Twins(SCALAR_SPEC)
    twins.steady()
    for seed, engine in ((3, _engine), (4, _scalar_rewritten), (5, _engine)):
        fast, slow = twins.refill(engine, seed)
        assert _same(fast, slow)
        assert len(fast[2]["recapture_required"]) == 4  # every layer's scale changed
        assert fast[4]["layers.0.smax"] == twins.fast[1].entries["layers.0.smax"].storage
    assert twins.fast[1]._steady is not None


# ---- one scenario per check before the first write, each with its canary ----------------------

def _owner_rebuilt(model: Stack, seed: int) -> None:
    """An owner on the way to the holders rebuilt: layer 1 replaced by a new layer object whose
    holders are rebuilt too (its old object also ran the step, so its dicts look steady)."""
    _engine(model, seed)
    fresh = Layer()
    fresh.load(seed * 100 + STEADY_LAYER)
    fresh.post_load()
    model.layers[STEADY_LAYER] = fresh


def _source_swapped(model: Stack, seed: int) -> None:
    """A source object replaced (same layout, other values) on a layer whose step did not run."""
    _engine(model, seed)
    layer = model.layers[2]
    layer.scale = nn.Parameter(layer.scale + 1.0, requires_grad=False)


def _startup_repointed(model: Stack, seed: int) -> None:
    """A startup tensor the engine re-pointed at new storage (``t.data = new``)."""
    _engine(model, seed)
    with torch.no_grad():
        model.layers[0].sq.data = torch.zeros(6)


def _other_holders(model: Stack, seed: int) -> None:
    """Another set of holders rebuilt: layer 3's step ran too."""
    _engine(model, seed)
    model.layers[3].post_load()


def _other_layout(model: Stack, seed: int) -> None:
    """A rebuilt holder of another layout (a broadcastable shape)."""
    _engine(model, seed)
    model.layers[STEADY_LAYER].inv = nn.Parameter(torch.full((1,), 7.0), requires_grad=False)


#: each check's scenario, and the text of the check's ``if`` in the generated function
SCENARIOS = {
    "hops": (_owner_rebuilt, "if not all(map(is_, map(dict_get, hop_dicts, hop_keys), "
             "hop_expected)):"),
    "sources": (_source_swapped, "if not all(map(is_, map(dict_get, source_dicts, "
                "source_keys), source_tensors)):"),
    "addresses": (_startup_repointed, "if not joint.intact():"),
    "rebuilt": (_other_holders, "if tuple(map(is_not, current, table_storages)) != rebuilt:"),
    "layout": (_other_layout, "if not layout_guard.check(*theirs):"),
}


@pytest.mark.parametrize("check", sorted(SCENARIOS))
def test_a_broken_precondition_falls_back_to_the_slow_path(twins: Twins, check: str):
    scenario, _line = SCENARIOS[check]
    fast, slow = twins.refill(scenario, 3)
    assert _same(fast, slow)
    assert twins.runs == [1]  # the slow path decided
    twins.runs.clear()
    fast, slow = twins.refill(_engine, 4)  # and the steady state again after it
    assert _same(fast, slow)


@pytest.mark.parametrize("check", sorted(SCENARIOS))
def test_canary_without_the_check_the_scenario_goes_wrong(twins: Twins, check: str,
                                                          monkeypatch: pytest.MonkeyPatch):
    scenario, line = SCENARIOS[check]
    body = steady._body

    def without(*a: Any, **k: Any) -> list[str]:
        lines = body(*a, **k)
        assert line in lines, line
        return [("if False:" if text == line else text) for text in lines]

    monkeypatch.setattr(steady, "_body", without)
    model, plan, _ = twins.fast
    mask = plan._last_take[1]
    plan._steady = steady.build(plan, mask)
    fast, slow = twins.refill(scenario, 3)
    assert not _same(fast, slow)  # wrong values, a holder not bound back, or a moved report


def test_a_refused_plan_is_tried_again_once_acceptable():
    """``steady.build`` refuses a plan whose owner hops are checked one by one; the refusal is
    not kept: the next refill whose mask repeats, once the hops are back in their dicts,
    makes the entry (red where a refusal is remembered past what it read)."""
    twins = Twins()
    twins.steady()
    model, plan, _ = twins.fast
    hops = plan.holders.hops
    assert hops.slow == []
    plan._steady = None
    hops.slow.append(0)  # hop 0 also checked one by one (the same answer): refused
    for seed in (3, 4):
        fast, slow = twins.refill(_engine, seed)
        assert _same(fast, slow)
        assert plan._last_take[1] is not None and plan._steady is None
    hops.slow.clear()
    fast, slow = twins.refill(_engine, 5)
    assert _same(fast, slow) and plan._steady is not None
    fast, slow = twins.refill(_engine, 6)
    assert _same(fast, slow)


def test_another_after_falls_back_to_the_slow_path(twins: Twins):
    """The steady entry is keyed on the refill's ``after`` (made with none here): a refill
    that passes other tensors takes the slow path, which proves them with the holders; the
    entry made again over them proves them too (red without the key's ``after`` check)."""
    model, plan, _ = twins.fast
    outside = [torch.arange(4.0)]
    after = AtAddresses(outside, [t.data_ptr() for t in outside], hold=True)
    for seed in (3, 4, 5):
        _engine(model, seed)
        report = plan.refill(verify=True, after=after)
        assert report.moved == [] and plan.holders.after_checked is report
    assert twins.runs == [1]  # the first only; then the entry made over this after
    assert plan._steady.fn.__globals__["after_at_build"] is after
