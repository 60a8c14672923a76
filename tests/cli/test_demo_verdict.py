"""``derivgraph demo`` exits 0 only if derivgraph's reloads moved nothing and match the cold
start bit for bit (README, "Set up"); the failing half had no test: any one bad figure exits 1.
"""

from __future__ import annotations

import json

import pytest

import derivgraph.tools.demo as demo
from derivgraph.cli import main


def _result(**bad: tuple[int, float]) -> demo.DemoResult:
    paths = {"naive": (27, 5.9), "derivgraph": (0, 0.0), "back_to_a": (0, 0.0), **bad}
    return demo.DemoResult(**{name: demo.PathResult(moved, err, ["x"] * moved)
                              for name, (moved, err) in paths.items()},
                           device="cpu", derived=1, graph_visible=1)


@pytest.mark.parametrize("bad, code", [
    ({}, 0),
    ({"derivgraph": (1, 0.0)}, 1),               # one tensor moved A->B
    ({"derivgraph": (0, 2.0 ** -40)}, 1),        # close, not bit-exact
    ({"back_to_a": (1, 0.0)}, 1),                # the B->A leg moved
    ({"back_to_a": (0, float("inf"))}, 1),       # the B->A leg wrong (NaN reads as inf)
])
@pytest.mark.parametrize("fmt", ["text", "json"])
def test_demo_exit_status_is_its_verdict(monkeypatch, capsys, bad, code, fmt) -> None:
    monkeypatch.setattr(demo, "run_demo", lambda device="cpu", seed=0: _result(**bad))
    assert main(["demo", "--format", fmt]) == code
    out = capsys.readouterr().out
    if fmt == "json":
        data = json.loads(out)
        assert data["naive"] == {"moved": 27, "max_abs_err": 5.9}
        assert data["derivgraph"]["moved"] == _result(**bad).derivgraph.moved
