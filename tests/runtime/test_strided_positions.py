"""The refill table's positions read as strided segments of the holder table's ids
(:func:`~derivgraph.runtime.engine.strided_positions`): wherever it answers, its answer is each
target's position by a dict of positions (the reference), and where it cannot (no period, too
many segments, a target not held) it says None and the dict decides."""

from __future__ import annotations

import random
from itertools import count
from typing import Any

import pytest

from derivgraph.runtime import engine
from derivgraph.runtime.engine import strided_positions


def _reference(items: list[str], targets: list[str]) -> list[int | None]:
    position = dict(zip(items, count()))
    return list(map(position.get, targets))


def _stamped(layers: int) -> tuple[list[str], list[str]]:
    names = ("inv", "prod", "strides", "scale_alias")
    items = ["t.a", "t.b"] + [f"layers.{i}.{n}" for i in range(layers) for n in names]
    written = [f"layers.{i}.{n}" for i in range(layers) for n in ("inv", "prod")]
    return items, written + [f"layers.{i}.strides" for i in range(layers)] + ["t.b"]


def test_a_stamped_table_s_targets_are_read_in_segments() -> None:
    items, targets = _stamped(500)
    assert strided_positions(items, targets) == _reference(items, targets)


@pytest.mark.parametrize("case", ["a target not held", "a target twice", "reversed",
                                  "shuffled", "empty", "one", "every item", "a gap"])
def test_each_answer_is_the_dict_s_or_none(case: str) -> None:
    items, targets = _stamped(60)
    rng = random.Random(5)
    if case == "a target not held":
        targets[70] = "nowhere"
    elif case == "a target twice":
        targets[71] = targets[69]
    elif case == "reversed":
        targets.reverse()
    elif case == "shuffled":
        rng.shuffle(targets)
    elif case == "empty":
        targets = []
    elif case == "one":
        targets = [targets[3]]
    elif case == "every item":
        targets = list(items)
    elif case == "a gap":
        del targets[40:43]
    got = strided_positions(items, targets)
    want = _reference(items, targets)
    assert got is None or got == want
    if case == "a target not held":
        assert got is None
    elif case in ("empty", "one", "every item", "a gap"):
        assert got is not None  # segments with a period


def test_random_orders_answer_the_dict_s_or_none() -> None:
    rng = random.Random(11)
    answered = 0
    for _ in range(400):
        items = [f"x{j}" for j in range(rng.randint(1, 70))]
        step = rng.choice([1, 2, 3, 5])
        targets = [items[(j * step + rng.choice([0, 0, 0, 1])) % len(items)]
                   for j in range(rng.randint(0, 90))]
        got = strided_positions(items, targets)
        assert got is None or got == _reference(items, targets)
        answered += got is not None
    assert answered > 50


def test_the_refill_table_of_a_stamped_plan_takes_the_segments(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The compile's refill table: positions read in segments, equal to the dict's."""
    from derivgraph.compiler.stamp import stamping
    from derivgraph.planner import compile_plan
    from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

    answers: list[Any] = []
    real = engine.strided_positions

    def spy(items: list[str], targets: list[str]) -> Any:
        answers.append(real(items, targets))
        assert answers[-1] is None or answers[-1] == _reference(items, targets)
        return answers[-1]

    monkeypatch.setattr(engine, "strided_positions", spy)
    with stamping(True):
        plan = compile_plan(scaling_model(40), [scaling_spec()])
    assert answers and answers[-1] is not None
    table = plan._refill_table_now()
    assert table.index == [plan.holders.table.id_list.index(t) for t in table.ids]


def test_a_table_holding_an_id_twice_takes_the_dict_s_positions() -> None:
    """The segments are read only over distinct ids: with an id held twice the dict's
    position (its last) stands, not the first one a scan finds."""
    from types import SimpleNamespace

    import torch

    from derivgraph.runtime.accessors import HolderTable
    from derivgraph.runtime.engine import RefillTable

    ids = ["a", "b", "c", "d", "a", "b", "c", "d"]
    tensors = [torch.zeros(2) for _ in ids]
    entries = [SimpleNamespace(id=i, storage=t, startup_ptr=t.data_ptr())
               for i, t in zip(ids, tensors)]
    table = HolderTable(entries, None, ([{} for _ in ids], ids, [True] * len(ids)))
    refill = RefillTable(table, ["a", "b", "c", "d"], set(), set())
    assert sorted(refill.index) == [4, 5, 6, 7] == sorted(_reference(ids, ["a", "b", "c", "d"]))
