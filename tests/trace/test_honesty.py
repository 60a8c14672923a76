"""Trace honesty: an integer named after one of several equal shapes is flagged ambiguous, and
tensors built outside the traced step (in ``load_weights``) keep the draft from being complete."""

from __future__ import annotations

import torch
from torch import nn

from derivgraph.trace import trace_model


class Square(nn.Module):
    """Two shapes of equal value: 8 could be ``a.shape[0]`` or ``b.shape[0]``."""

    def __init__(self, rows_a: int = 8, rows_b: int = 8):
        super().__init__()
        self.a = nn.Parameter(torch.randn(rows_a, 3), requires_grad=False)
        self.b = nn.Parameter(torch.randn(rows_b, 5), requires_grad=False)

    def process_weights_after_loading(self) -> None:
        self.strides = torch.full((self.b.shape[0],), 7, dtype=torch.int64)
        self.scale = self.a.abs().amax(1)


def _post(m):  # noqa: ANN001
    m.process_weights_after_loading()


def test_equal_shapes_make_the_draft_ambiguous():
    out = trace_model(lambda: Square(8, 8), _post)
    assert out.proof.ok  # the oracle cannot tell them apart either
    assert not out.draft.complete
    caveat = next(c for c in out.draft.caveats if c.startswith("ambiguous"))
    assert "a.shape[0]" in caveat and "b.shape[0]" in caveat
    assert "# CAVEAT: ambiguous" in out.yaml


def test_distinct_shapes_are_not_ambiguous():
    out = trace_model(lambda: Square(8, 6), _post)
    assert out.proof.ok and out.draft.caveats == [] and out.draft.complete
    assert "b_d0" in out.yaml and "a_d0" not in out.yaml.split("strides")[0]


class LoadBuilt(Square):
    """Builds a weight-derived tensor in load_weights, before the traced post-load step."""

    def __init__(self):
        super().__init__(8, 6)
        self.fused = torch.cat([self.a, self.a], 0)  # what load_weights would build


def test_tensors_built_outside_the_step_are_named():
    out = trace_model(LoadBuilt, _post)
    assert not out.draft.complete
    caveat = next(c for c in out.draft.caveats if c.startswith("built outside"))
    assert "fused" in caveat


def test_cli_summary_says_incomplete(capsys, monkeypatch):
    import sys
    import types

    from derivgraph.cli import main

    mod = types.ModuleType("honesty_models")
    mod.make, mod.post = (lambda: Square(8, 8)), _post
    monkeypatch.setitem(sys.modules, "honesty_models", mod)
    main(["trace", "--model", "honesty_models:make", "--post-load", "honesty_models:post"])
    text = capsys.readouterr().out
    assert "caveat: ambiguous" in text and "not complete" in text
