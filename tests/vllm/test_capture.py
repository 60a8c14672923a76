"""The strict-mode capture audit hook on vLLM's ``CUDAGraphWrapper.__call__``.

A real CUDA-graph capture needs a GPU (see ``tests/audit/runtime/test_capture.py``'s gpu test). Here
the wrapper derivgraph installs is driven on CPU: vLLM's own ``__call__`` without a forward
context (no capture: passes through), and the wrapper around a stand-in capture call with the
"is this stream capturing" test forced on, so the strict failure path runs.
"""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("vllm")

from derivgraph.audit.runtime.reads import ReadRecorder  # noqa: E402
from derivgraph.errors import CaptureAuditError  # noqa: E402
from derivgraph.spec.load import load_specs  # noqa: E402
from tests.fixtures import capture_canaries as cc  # noqa: E402
from vllm_integration import capture_wrapper, hooks, session  # noqa: E402
from vllm_integration.config import CAPTURE_AUDIT_ENV, MODE_ENV  # noqa: E402

pytestmark = pytest.mark.vllm


@pytest.fixture
def capturing(monkeypatch):
    """Every call 'captures': vLLM's capture test and the stream-capture test forced on."""
    monkeypatch.setattr(capture_wrapper, "_will_capture", lambda wrapper: True)
    monkeypatch.setattr(ReadRecorder, "_recording", lambda self: True)
    monkeypatch.setenv(MODE_ENV, "strict")
    monkeypatch.delenv(CAPTURE_AUDIT_ENV, raising=False)


def _planned(hide: bool) -> cc.CanaryModel:
    model = cc.CanaryModel(hide=hide)
    session.attach(model, load_specs([cc.SPEC_PATH]))
    return model


def _call(model: cc.CanaryModel):
    def capture_call(self, x):  # noqa: ANN001, ANN202 - stands in for vLLM's capture branch
        with torch.no_grad():
            return model(x)

    return capture_wrapper.wrap_cudagraph_call(capture_call)


def test_strict_capture_fails_on_an_undeclared_read(capturing):
    model = _planned(hide=True)
    was = hooks.is_installed()
    hooks.install()
    try:
        with pytest.raises(CaptureAuditError, match="HIDDEN"):
            _call(model)(object(), cc.static_input(model))
        ok = _planned(hide=False)
        assert _call(ok)(object(), cc.static_input(ok)).shape == (4, cc.H)
    finally:
        session.detach(model)
        if not was:
            hooks.uninstall()


def test_the_audit_is_off_outside_strict_mode_or_when_disabled(capturing, monkeypatch):
    model = _planned(hide=True)
    was = hooks.is_installed()
    hooks.install()
    try:
        monkeypatch.setenv(CAPTURE_AUDIT_ENV, "0")
        _call(model)(object(), cc.static_input(model))
        monkeypatch.delenv(CAPTURE_AUDIT_ENV)
        monkeypatch.setenv(MODE_ENV, "refill")
        _call(model)(object(), cc.static_input(model))
    finally:
        session.detach(model)
        if not was:
            hooks.uninstall()


def test_vllm_cudagraph_wrapper_without_forward_context_passes_through(monkeypatch):
    from vllm.compilation.cuda_graph import CUDAGraphWrapper

    monkeypatch.setenv(MODE_ENV, "strict")
    was = hooks.is_installed()
    hooks.install()
    try:
        assert getattr(CUDAGraphWrapper.__call__, "__derivgraph_wrapper__", False)
        wrapper = object.__new__(CUDAGraphWrapper)
        wrapper.runnable = lambda x: x * 2
        assert torch.equal(wrapper(torch.ones(2)), torch.full((2,), 2.0))
        assert not capture_wrapper._will_capture(wrapper)
    finally:
        if not was:
            hooks.uninstall()
