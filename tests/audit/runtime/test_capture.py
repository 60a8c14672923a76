"""The capture-time pointer audit: every tensor a captured graph reads, classified.

Canary: a model whose forward reads a weight-derived tensor hidden in a module-level dict is
flagged (with the op that read it and the dict as owner); declared derived tensors, parameters,
buffers, inputs and activations are not. On CPU with the recorded forward; the ``gpu`` test
does the same under a real ``torch.cuda.graph``.
"""

from __future__ import annotations

import json

import pytest
import torch

from derivgraph import DerivgraphError
from derivgraph.audit.runtime.capture import (
    CaptureAudit,
    CaptureAuditError,
    ReadClass,
    audit_capture,
)
from derivgraph.audit.runtime.reads import ReadRecorder
from derivgraph.cli import main
from derivgraph.planner import compile_plan
from derivgraph.spec.load import load_specs
from derivgraph.tools.forward_capture import capture
from tests.fixtures import capture_canaries as cc

MODEL = "tests/fixtures/capture_canaries.py"


def _declared(model: torch.nn.Module) -> dict:
    return compile_plan(model, load_specs([cc.SPEC_PATH])).declared()


def _owners(report, read_class: ReadClass) -> list[str]:  # noqa: ANN001
    return [r.owner for r in report.of(read_class)]


def test_declared_tensors_parameters_buffers_and_activations_are_not_flagged():
    model = cc.build_declared()
    report = audit_capture(model, cc.static_input(model), declared=_declared(model))
    assert report.ok() and report.undeclared == []
    assert _owners(report, ReadClass.DECLARED) == ["proj.weight_t"]
    assert _owners(report, ReadClass.PARAMETER) == ["proj.scale"]
    activations = _owners(report, ReadClass.ACTIVATION)
    assert "input[0]" in activations and "(made inside the capture)" in activations
    (declared,) = report.of(ReadClass.DECLARED)
    assert declared.ops == ["mm"] and declared.shape == (cc.H, cc.H)


def test_a_weight_derived_tensor_in_a_module_level_dict_is_flagged():
    model = cc.build_hidden()
    report = audit_capture(model, cc.static_input(model), declared=_declared(model))
    assert not report.ok()
    (hidden,) = report.undeclared
    assert hidden.owner == f"{cc.__name__}.HIDDEN[{model.proj.key!r}]"
    assert hidden.ops == ["mm"] and hidden.dtype == "float32"
    assert _owners(report, ReadClass.DECLARED) == ["proj.weight_t"]  # still not flagged
    assert "FAIL: 1 undeclared" in report.render()


def test_without_a_plan_a_derived_attribute_is_undeclared_with_its_census_path():
    model = cc.build_declared()
    report = audit_capture(model, cc.static_input(model))
    assert _owners(report, ReadClass.UNDECLARED) == ["proj.weight_t"]


def test_strict_mode_fails_the_capture():
    model = cc.build_hidden()
    with pytest.raises(CaptureAuditError, match="DG061") as err:
        audit_capture(model, cc.static_input(model), declared=_declared(model), strict=True)
    assert isinstance(err.value, DerivgraphError)
    assert "HIDDEN" in str(err.value) and "mm" in str(err.value)
    ok = cc.build_declared()
    assert audit_capture(ok, cc.static_input(ok), declared=_declared(ok), strict=True).ok()


def test_the_context_manager_around_a_capture_only_reads():
    model = cc.build_hidden()
    x = cc.static_input(model)
    before = {n: t.clone() for n, t in model.state_dict().items()}
    hidden = cc.HIDDEN[model.proj.key].clone()
    with CaptureAudit(model, declared=_declared(model), inputs=[x]) as audit:
        graph = capture(model, x)
    assert [r.owner.rsplit(".", 1)[-1] for r in audit.report.undeclared] == [
        f"HIDDEN[{model.proj.key!r}]"]
    assert all(torch.equal(before[n], t) for n, t in model.state_dict().items())
    assert torch.equal(cc.HIDDEN[model.proj.key], hidden)
    assert torch.equal(graph.replay(), model(x))


def test_an_in_place_write_does_not_turn_an_external_tensor_into_an_activation():
    w = torch.ones(3)
    recorder = ReadRecorder()
    with recorder:
        w.add_(1.0)
        (w * 2).sum()
    (entry,) = [e for e in recorder.reads.values() if not e.produced]
    assert entry.tensor is w and entry.ops == ["add_", "mul"]


@pytest.mark.parametrize("factory,strict_rc", [("build_declared", 0), ("build_hidden", 1)])
def test_cli(capsys, factory, strict_rc):  # noqa: ANN001
    args = ["audit", "capture", "--model", f"{MODEL}:{factory}",
            "--forward", f"{MODEL}:static_input", "--specs", str(cc.SPEC_PATH)]
    assert main([*args, "--format", "json"]) == 0  # reports, fails only with --strict
    out = json.loads(capsys.readouterr().out)
    assert out["counts"]["declared"] == 1 and out["counts"]["undeclared"] == strict_rc
    assert main([*args, "--strict"]) == strict_rc
    text = capsys.readouterr().out
    assert ("HIDDEN[" in text) == bool(strict_rc)
    assert ("PASS" in text) == (not strict_rc)


@pytest.mark.gpu
def test_a_real_cuda_graph_capture_flags_the_hidden_tensor():
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    model = cc.CanaryModel(hide=True, device="cuda")
    declared = _declared(model)
    x = cc.static_input(model)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream), torch.no_grad():
        for _ in range(2):  # warm-up (not recorded: only ops inside the capture count)
            model(x)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with CaptureAudit(model, declared=declared, inputs=[x], only_while_capturing=True) as audit:
        with torch.cuda.graph(graph), torch.no_grad():
            y = model(x)
    report = audit.report
    assert report.ops > 0
    assert [r.owner for r in report.undeclared] == [f"{cc.__name__}.HIDDEN[{model.proj.key!r}]"]
    assert [r.owner for r in report.of(ReadClass.DECLARED)] == ["proj.weight_t"]
    assert all(r.device.startswith("cuda") for r in report.reads)
    graph.replay()
    torch.cuda.synchronize()
    assert torch.allclose(y, model(x))
    # strict: the capture fails
    graph2 = torch.cuda.CUDAGraph()
    with pytest.raises(CaptureAuditError):
        with CaptureAudit(model, declared=declared, inputs=[x], only_while_capturing=True,
                          strict=True):
            with torch.cuda.graph(graph2), torch.no_grad():
                model(x)
