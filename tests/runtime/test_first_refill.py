"""The first refill of a process builds nothing: :meth:`Plan.prepare` (called by compile_plan
and capture) built the refill table, the entry functions and the checks' proofs.

Each proof is taken by its own full check passing at prepare time, so a change made after
compile and before the first run is still found (a re-pointed derived tensor, a moved source, a
rebuilt holder), with the dict tags and the storage words on and off. The canary plants a
prepare that settles the holders' tags without their sweep: a holder the engine rebuilt before
it goes unseen."""

from __future__ import annotations

import pytest
import torch

from derivgraph import addresses as addresses_module
from derivgraph.runtime import engine as engine_module
from derivgraph.runtime import watch as watch_module
from derivgraph.runtime.plan import Plan
from derivgraph.runtime.programs import Programs
from tests.runtime.conftest import fast_path_on_off
from tests.runtime.test_flat_pass import _compiled, _wrong
from tests.runtime.test_refill_batched import SPEC, _check_against_cold, _stack


@pytest.fixture(params=["words", "no-words"])
def words(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    return fast_path_on_off(request, monkeypatch, addresses_module,
                            "the storage words are not proven on this torch build")


def test_the_first_refill_builds_nothing(dict_tags, words, per_entry_spy, monkeypatch):
    from derivgraph import compile_plan

    model = _stack(0)
    plan = compile_plan(model, [SPEC])
    startup = {k: e.storage for k, e in plan.entries.items()}
    per_entry_spy.clear()  # compile binds every holder per entry
    built: list[str] = []
    table_init, entry_function = engine_module.RefillTable.__init__, Programs._entry_function
    take = addresses_module.addresses

    def spy_table(self, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        built.append("refill table")
        table_init(self, *args, **kwargs)

    def spy_entry(self, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        built.append("entry function")
        return entry_function(self, *args, **kwargs)

    def spy_words(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        built.append("storage words")
        return take(*args, **kwargs)

    monkeypatch.setattr(engine_module.RefillTable, "__init__", spy_table)
    monkeypatch.setattr(Programs, "_entry_function", spy_entry)
    monkeypatch.setattr(addresses_module, "addresses", spy_words)
    model.load(1)
    model.post_load()
    report = plan.refill(verify=True)
    assert built == [] and per_entry_spy == []
    assert report.moved == [] and report.taken_from_engine == len(startup)
    _check_against_cold(model, startup, 1)


def test_a_tensor_repointed_before_the_first_run_is_restored(dict_tags, words):
    model, plan = _compiled()
    startup = model[5].total.data_ptr()
    model[5].total.data = torch.zeros(8)
    for layer in model:
        layer.load(7)
    assert plan.run().restored == ["5.total"]
    assert model[5].total.data_ptr() == startup and _wrong(model) == []


def test_a_source_moved_before_the_first_run_is_found(dict_tags, words):
    model, plan = _compiled()
    model[4].w.data = torch.full((8,), 4.0)
    report = plan.run()
    assert any(r.startswith("4.w ") for r in report.recapture_required)
    assert _wrong(model) == [] and torch.equal(model[4].rw, torch.full((8,), 0.25))


def _rebuilt_then_prepared(model, plan) -> torch.Tensor:  # noqa: ANN001
    """The engine rebuilds a holder, then a prepare (as a capture would) runs."""
    startup = model.layers[2].inv
    model.layers[2].inv = torch.nn.Parameter(startup.detach().clone(), requires_grad=False)
    plan.prepare()
    return startup


def test_a_holder_rebuilt_before_a_prepare_is_bound_back(dict_tags):
    from derivgraph import compile_plan

    model = _stack(0)
    plan = compile_plan(model, [SPEC])
    startup = _rebuilt_then_prepared(model, plan)
    plan.run()
    assert model.layers[2].inv is startup


def test_canary_a_prepare_settling_tags_without_the_sweep_hides_a_rebuilt_holder(
        monkeypatch):
    from derivgraph import compile_plan, dict_versions

    if not dict_versions.AVAILABLE:
        pytest.skip("no PEP 509 version tags on this interpreter")
    monkeypatch.setattr(watch_module, "MIN_WATCHED", 0)  # the test model's tables are small
    prepare = Plan.prepare

    def planted(self: Plan) -> None:
        prepare(self)
        self.holders.table.settle()  # planted: tags settled over a state no sweep proved

    model = _stack(0)
    plan = compile_plan(model, [SPEC])
    monkeypatch.setattr(Plan, "prepare", planted)
    startup = _rebuilt_then_prepared(model, plan)
    plan.run()
    assert model.layers[2].inv is not startup  # the rebuilt holder stays: red
