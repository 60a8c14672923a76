"""``derivgraph trace``: "the exit status is 0 only when the draft is proven; an unproven draft
is printed but never written" (docs/trace.md). The CLI half had no test: the API tests check the
proof, not what the command does with it. A real trace of the toy model, its proof turned down.
"""

from __future__ import annotations

import json
import sys
import types

import pytest

import derivgraph.trace.api as api
from derivgraph.cli import main
from tests.trace.test_trace import Toy


@pytest.fixture
def toy_module(monkeypatch):
    mod = types.ModuleType("r39_toy")
    mod.make, mod.post = (lambda: Toy("fill")), (lambda m: m.process_weights_after_loading())
    monkeypatch.setitem(sys.modules, "r39_toy", mod)


def _turned_down(monkeypatch) -> None:
    real = api.trace_model

    def trace_model(*args, **kwargs):
        outcome = real(*args, **kwargs)
        assert outcome.proof.ok  # the toy's draft is proven; the verdict is what we turn down
        outcome.proof.ok = False
        return outcome

    monkeypatch.setattr(api, "trace_model", trace_model)


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_an_unproven_draft_exits_1_and_is_never_written(toy_module, monkeypatch, capsys,
                                                        tmp_path, fmt) -> None:
    _turned_down(monkeypatch)
    target = tmp_path / "draft.yaml"
    argv = ["trace", "--model", "r39_toy:make", "--post-load", "r39_toy:post", "-o", str(target)]
    assert main([*argv, "--format", fmt]) == 1
    assert not target.exists()
    out = capsys.readouterr().out
    if fmt == "json":
        summary = json.loads(out)
        assert summary["proven"] is False and summary["written"] is None
    else:
        assert f"not written: {target} (the draft is not proven)" in out


def test_a_proven_draft_is_written(toy_module, capsys, tmp_path) -> None:
    target = tmp_path / "draft.yaml"
    argv = ["trace", "--model", "r39_toy:make", "--post-load", "r39_toy:post", "-o", str(target)]
    assert main(argv) == 0
    text = target.read_text()
    assert "\nversion: 1\n" in text and "name: host_cpu" in text
