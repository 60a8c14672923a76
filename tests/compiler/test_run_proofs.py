"""A run of rows is replayed by columns (``Stamper._replay_run``) only where every row was
proved by the run's template, all by one column proof, and every row has the template's
number of derived tensors; then the run's rows leave the stamper's proofs. Canaries (see the
helper's NOTES): the template check dropped; the one-proof check dropped."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from derivgraph.compiler.graph import DerivedGraph
from derivgraph.compiler.stamp import Stamper


class _Passed(Exception):
    """The checks passed: the replay itself was reached."""


def _stamper(rows: int, width: int = 1) -> tuple[Stamper, Any]:
    def made() -> set[int]:
        raise _Passed

    template = SimpleNamespace(program=SimpleNamespace(inputs=(0,) * width, made=made))
    layers = [(SimpleNamespace(module_path=f"layers.{i}"), {}, [object()] * width)
              for i in range(rows)]
    return Stamper(DerivedGraph(None), lambda node, reads: None, layers), template  # type: ignore[arg-type]


def test_every_row_of_the_template_and_one_proof_is_replayed() -> None:
    stamper, template = _stamper(4)
    proof = object()
    stamper.proven = {i: (template, proof, i) for i in range(4)}
    with pytest.raises(_Passed):
        stamper._replay_run(template, 1, 3)


@pytest.mark.parametrize("bad", ["none", "template", "proof"])
def test_a_row_not_so_proved_refuses_the_run(bad: str) -> None:
    stamper, template = _stamper(4)
    proof = object()
    stamper.proven = {i: (template, proof, i) for i in range(4)}
    if bad == "none":
        del stamper.proven[2]
    elif bad == "template":
        stamper.proven[2] = (SimpleNamespace(program=template.program), proof, 2)
    else:
        stamper.proven[3] = (template, object(), 3)
    assert stamper._replay_run(template, 1, 3) is False


def test_rows_of_another_width_refuse_the_run() -> None:
    stamper, template = _stamper(3, width=2)
    proof = object()
    stamper.proven = {i: (template, proof, i) for i in range(3)}
    stamper.nodes[2] = [object()]
    assert stamper._replay_run(template, 0, 3) is False
