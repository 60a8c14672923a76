"""The load wrapper's recording: every name, and fold sources' loaded values when the model's
plan declares folds (the witness is resolved once per load, not once per weight)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from derivgraph import compile_plan, load_specs
from derivgraph.examples.muse_spark import MuseSparkTextConfig, build_muse_spark, make_muse_weights
from derivgraph.guard.refold import LoadWitness
from tests.toy import Toy
from vllm_integration import reload_wrappers, session

pytestmark = pytest.mark.vllm

ROOT = Path(__file__).resolve().parents[2]
ROUTER = "model.layers.0.feed_forward.router.weight"


def test_fold_sources_are_witnessed_and_every_name_recorded():
    cfg = MuseSparkTextConfig()
    model = build_muse_spark(make_muse_weights(cfg, 1))
    plan = compile_plan(model, load_specs([ROOT / "specs" / "vllm_muse_spark.yaml"]))
    witness = LoadWitness(plan)
    session._store(model, session.ModelState(plan, witness=witness))
    try:
        fresh = make_muse_weights(cfg, 2)
        names: list[str] = []
        passed = list(reload_wrappers._recording(fresh.items(), names, model))
        assert names == list(fresh) and [n for n, _ in passed] == list(fresh)
        assert all(t is fresh[n] for n, t in passed)
        assert ROUTER in witness.loaded and set(witness.loaded) == set(plan.folds.entries)
        for fold_id, value in witness.loaded.items():
            assert value is not fresh[fold_id] and torch.equal(value, fresh[fold_id])
    finally:
        session.detach(model)


def test_without_folds_only_names_are_recorded(monkeypatch):
    model = Toy()
    model.post_load()
    session._store(model, session.ModelState(compile_plan(model, [])))
    try:
        asked: list[str] = []
        monkeypatch.setattr(session, "witness", lambda m, n, t: asked.append(n))
        weights = [("weight", torch.ones(2)), ("scale", torch.ones(2))]
        names: list[str] = []
        assert list(reload_wrappers._recording(iter(weights), names, model)) == weights
        assert names == ["weight", "scale"] and asked == []
        assert session.witness_note(model) is None
    finally:
        session.detach(model)


def test_arguments_are_read_and_replaced_as_passed():
    def reload(vllm_config, model, weights_iterator, weights_path, is_checkpoint_format=True):
        return model, weights_iterator, is_checkpoint_format

    arguments = reload_wrappers._Arguments(reload)
    assert arguments.simple
    args, kwargs = ("cfg", "m", [1]), {"weights_path": None}
    assert arguments.get(args, kwargs, "model") == "m"
    assert arguments.get(args, kwargs, "is_checkpoint_format", True) is True
    args2, kwargs2 = arguments.replace(args, kwargs, "weights_iterator", [2])
    assert reload(*args2, **kwargs2) == ("m", [2], True) and args == ("cfg", "m", [1])
    kw = {"model": "m", "weights_iterator": [1], "weights_path": None,
          "is_checkpoint_format": False}
    args3, kwargs3 = arguments.replace(("cfg",), kw, "weights_iterator", [3])
    assert reload(*args3, **kwargs3) == ("m", [3], False) and kw["weights_iterator"] == [1]
    assert not reload_wrappers._Arguments(lambda *a, **k: None).simple
