"""The same-weight oracle: ``derivgraph audit runtime --repeat N`` and its worker RPC.

Canary: a flagless in-place fold (``router.weight.mul_(m)`` in the post-load step, see
``FoldModel`` in ``tests/fixtures/runtime_canaries.py``) changes a weight although the same
weights were reloaded: tensors changed > 0 under ``--repeat 2``. A fold spent after the first
load (``OnceFoldModel``) changes the router on each full reload; with a ``kind: fold`` spec it
is 0. The tiny real vLLM Llama through vLLM's real
``reload_weights`` changes 0 tensors.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch import nn

from derivgraph import load_spec_text, load_specs
from derivgraph.audit.runtime.repeat import repeat_oracle, same_weight_rounds
from derivgraph.cli import main
from tests.fixtures import runtime_canaries as rc

ROOT = Path(__file__).resolve().parents[3]
CANARIES = ROOT / "tests" / "fixtures" / "runtime_canaries.py"


def _cli(capsys, *argv):  # noqa: ANN001, ANN202
    code = main(["audit", "runtime", *argv])
    return code, capsys.readouterr().out


def test_fold_canary_changes_tensors_under_repeat_2(capsys):  # noqa: ANN001
    code, out = _cli(capsys, "--model", f"{CANARIES}:fold_factory", "--reload",
                     f"{CANARIES}:fold_reload", "--cold", f"{CANARIES}:fold_factory",
                     "--repeat", "2", "--no-plan", "--strict", "--format", "json")
    data = json.loads(out)
    assert code == 1 and not data["ok"] and data["reference"] == "cold start"
    assert [r["changed"] for r in data["rounds"]] == [1, 1] and data["tensors"] == 2
    assert [r["values_differing"] for r in data["rounds"]] == [1, 1]
    assert [r["new_addresses"] for r in data["rounds"]] == [0, 0]  # in place: only the value
    assert data["changed_paths"] == ["router.weight"]
    # the fold is applied once per post-load run: m**2 after one reload, m**3 after two
    model = rc.fold_factory()
    rc.fold_reload(model)
    w = rc.fold_weights(rc.WEIGHTS_A)["router.weight"]
    assert torch.allclose(model.router.weight, w * rc.FOLD_MULTIPLIER ** 2)


def test_fold_canary_text_table(capsys):  # noqa: ANN001
    code, out = _cli(capsys, "--model", f"{CANARIES}:fold_factory", "--reload",
                     f"{CANARIES}:fold_reload", "--repeat", "2", "--no-plan")
    assert code == 0  # findings fail only with --strict
    lines = out.splitlines()
    assert "against the startup census" in lines[0]
    assert lines[1].split() == ["reload", "tensors", "changed", "at", "new", "addresses",
                                "values", "differing", "Python", "scalars", "changed"]
    assert lines[2].split() == ["1", "1/2", "0", "1", "0"]
    assert lines[3].split() == ["2", "1/2", "0", "1", "0"]
    assert "stale     UNDECLARED router.weight" in out and out.rstrip().startswith(
        "same-weight") and "FINDINGS: 1 path(s) changed" in out  # FAIL: only with --strict


def test_fold_canary_zero_with_the_fold_spec():
    """A fold spent after the first load (vLLM's NVIDIA Muse Spark) serves an unfolded router
    after each full reload: 1 tensor changed per round without the spec, 0 with it (the plan's
    refill folds each load once)."""
    red = repeat_oracle(rc.once_fold_factory, rc.once_fold_reload, cold=rc.once_fold_factory,
                        repeat=2)
    assert [r.changed for r in red.rounds] == [1, 1]
    assert "router.weight" in set(red.changed_paths())
    specs = load_spec_text(rc.fold_spec_text())
    report = repeat_oracle(rc.once_fold_factory, rc.once_fold_reload, cold=rc.once_fold_factory,
                           repeat=3, specs=specs)
    assert report.ok(), report.render()
    assert [r.changed for r in report.rounds] == [0, 0, 0]


def test_repeat_counts_new_addresses_and_green_with_specs():
    same_a = rc.make_weights(seed=rc.WEIGHTS_A)
    red = repeat_oracle(rc.factory, lambda m: rc.reload_with(m, same_a), cold=rc.factory,
                        repeat=2)
    moved = {rc.canary_path(p) for p in rc.PLACES if p != "python_scalar"}
    moved |= {"layers.7.indexer", "layers.7._fused"}
    assert {r.new_addresses for r in red.rounds} == {len(moved)}
    assert set(red.changed_paths()) == moved
    green = repeat_oracle(rc.factory_once, lambda m: rc.reload_with(m, same_a),
                          cold=rc.factory_once, repeat=2, specs=load_specs([rc.spec_path()]))
    assert green.ok(), green.render()
    assert green.rounds[-1].tensors == 40


class _Counting(nn.Module):
    """A post-load step that bumps a Python float every run (a scalar graphs would bake)."""

    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(3), requires_grad=False)
        self.runs = 0.0

    def reload(self) -> None:
        self.runs += 1.0


def test_repeat_counts_changed_python_scalars():
    model = _Counting()
    report = same_weight_rounds(model, model.reload, repeat=2)
    assert [r.scalars_changed for r in report.rounds] == [1, 1]
    assert [r.changed for r in report.rounds] == [0, 0] and not report.ok()
    with pytest.raises(ValueError, match="at least 1"):
        same_weight_rounds(model, model.reload, repeat=0)


def test_worker_rpc_runs_the_same_oracle():
    from vllm_integration.worker_extension import DerivgraphWorkerExtension

    model = rc.fold_factory()

    class Worker(DerivgraphWorkerExtension):
        model_runner = type("Runner", (), {"get_model": staticmethod(lambda: model)})

        def reload_weights(self, **kwargs) -> None:  # noqa: ANN003 - GPUWorker's signature
            assert kwargs == {"weights_path": "/ckpt"}
            rc.fold_reload(model)

    out = Worker().derivgraph_repeat_oracle(repeat=2, reload_kwargs={"weights_path": "/ckpt"})
    assert out["model"] == "FoldModel" and out["reference"] == "startup census"
    assert [r["changed"] for r in out["rounds"]] == [1, 1] and not out["ok"]
    json.dumps(out)  # plain data: it crosses process boundaries through collective_rpc


@pytest.mark.vllm
@pytest.mark.slow
def test_tiny_llama_through_vllm_reload_weights_changes_nothing(tmp_path):  # noqa: ANN001
    pytest.importorskip("vllm")
    proc = subprocess.run([sys.executable, str(ROOT / "tests/fixtures/vllm_llama_repeat.py"),
                           str(tmp_path)], capture_output=True, text=True, timeout=900,
                          cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    data = json.loads(proc.stdout.strip().splitlines()[-1])
    assert data["derived"] == 13
    for key in ("cold", "rpc"):
        report = data[key]
        assert report["ok"] and report["repeat"] == 3, report
        assert report["tensors"] == 47
        assert [r["changed"] for r in report["rounds"]] == [0, 0, 0]
        assert [r["scalars_changed"] for r in report["rounds"]] == [0, 0, 0]
    assert data["cold"]["reference"] == "cold start"
    assert data["rpc"]["reference"] == "startup census"
