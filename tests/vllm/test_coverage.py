"""The registry sweep (scripts/vllm_coverage.py): docs/coverage.md is current, each verdict
goes red on a planted class, and the Humming `locks` spec keeps the startup storage."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
import torch
from torch import nn

pytest.importorskip("vllm")

from derivgraph import compile_plan, load_specs  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.vllm]


def _sweep_module():
    spec = importlib.util.spec_from_file_location("vllm_coverage", ROOT / "scripts" /
                                                  "vllm_coverage.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("vllm_coverage", module)  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


cov = _sweep_module()


@pytest.mark.slow
def test_coverage_doc_is_current():
    text = cov.render(cov.sweep())
    assert (ROOT / "docs" / "coverage.md").read_text() == text, (
        "docs/coverage.md is stale: python scripts/vllm_coverage.py --write docs/coverage.md")


@pytest.mark.slow
def test_sweep_names_every_registry_class():
    rows = cov.sweep(dynamic=False)
    names = {r.name for r in rows}
    linear = cov.linear_classes()
    assert set(linear) <= names and len(linear) >= 40
    assert {"MarlinLinearKernel", "MacheteLinearKernel", "HummingLinearKernel",
            "CutlassFP8ScaledMMLinearKernel", "CutlassExpertsFp8", "FlashInferExperts",
            "FlashInferImpl"} <= names
    by = {r.name: r for r in rows}
    assert by["HummingLinearKernel"].verdict is cov.Verdict.SPEC
    assert by["MacheteLinearKernel"].verdict is cov.Verdict.REGISTERED


# ---- canaries: each verdict is reachable and reached for the right reason ----------------------

class _NoPostLoad:
    pass


class _Registered:
    def process_weights_after_loading(self, layer):
        replace_parameter(layer, "weight", layer.weight.t())  # noqa: F821 - read, never run


class _Locks:
    def process_weights_after_loading(self, layer):
        self.name_only = "x"
        self.locks = torch.zeros(8, dtype=torch.int32)


def test_static_reader_verdicts():
    assert cov.static_verdict(_NoPostLoad, cov.Family.LINEAR)[0] is cov.Verdict.NO_STATE
    assert cov.static_verdict(_Registered, cov.Family.LINEAR)[0] is cov.Verdict.REGISTERED
    verdict, detail = cov.static_verdict(_Locks, cov.Family.LINEAR)
    assert verdict is cov.Verdict.ATTRIBUTES and detail == "locks"


class _Rebuilt:
    """An experts-like class allocating a constant in its constructor."""

    calls = 0

    def __init__(self, moe, qc, *args):
        type(self).calls += 1
        self.strides = torch.full((4,), 256, dtype=torch.int64)


class _Growing(_Rebuilt):
    def __init__(self, moe, qc, *args):
        super().__init__(moe, qc)
        self.scratch = torch.zeros(type(self).calls)


def test_dynamic_run_guards_a_rebuilt_constant_and_reports_a_resize():
    verdict, detail = cov.build_experts_twice(_Rebuilt)
    assert verdict is cov.Verdict.GUARDED and detail == "strides"
    verdict, detail = cov.build_experts_twice(_Growing)
    assert verdict is cov.Verdict.RECAPTURE and "experts.scratch" in detail


# ---- the Humming locks spec ------------------------------------------------------------------

class LinearBase(nn.Module):
    """Stands in for vLLM's LinearBase (specs match class names along the MRO)."""


HUMMING_HOLDERS = {  # spec -> (holder of the kernel object, its attribute)
    "vllm-humming-locks-kernel": ("quant_method", "kernel"),
    "vllm-humming-locks-fp8-linear": ("quant_method", "fp8_linear"),
    "vllm-humming-locks-scheme-kernel": ("scheme", "kernel"),
    "vllm-humming-locks-scheme-linear-kernel": ("scheme", "linear_kernel"),
}


@pytest.mark.parametrize("spec", sorted(HUMMING_HOLDERS))
def test_humming_locks_spec_keeps_the_startup_storage(spec):
    from vllm.model_executor.kernels.linear.mixed_precision.humming import HummingLinearKernel

    holder_name, attr = HUMMING_HOLDERS[spec]
    layer = LinearBase()
    layer.weight = nn.Parameter(torch.randn(4, 4), requires_grad=False)
    holder = type("GPTQLinearMethod", (), {})()
    setattr(layer, holder_name, holder)
    kernel = object.__new__(HummingLinearKernel)  # its post-load needs a GPU
    kernel.locks = torch.zeros(16, dtype=torch.int32)
    setattr(holder, attr, kernel)
    specs = [s for s in load_specs([ROOT / "specs" / "vllm_linear_humming.yaml"]) if s.name == spec]
    plan = compile_plan(layer, specs)
    assert list(plan.declared()) == [f"{holder_name}.{attr}.locks"]
    startup = kernel.locks
    kernel.locks = torch.zeros(16, dtype=torch.int32)  # what every post-load step does
    report = plan.refill(verify=True)
    assert report.moved == [] and kernel.locks is startup
    startup.fill_(3)  # a kernel left its semaphores dirty: run() writes zeros back
    plan.run()
    assert torch.count_nonzero(startup) == 0
