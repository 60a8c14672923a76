"""Drift detection: the hook table against the installed vLLM's source, planted drift, strict mode.

The source checks read files with ``ast`` (no import): the real vLLM tree must be clean, and a
copy of it with a moved target, a changed signature or an extra by-name import must go red.
The runtime check uses monkeypatched module objects: a wrapper over a target whose signature
changed falls back to the original function.
"""

from __future__ import annotations

import logging
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest

from derivgraph import DerivgraphError
from vllm_integration import drift, hook_table, hooks
from vllm_integration.hook_table import TABLE, VERIFIED_VLLM_VERSIONS, HookKind, HookRow

pytestmark = pytest.mark.vllm

ROOT = drift.source_root("vllm")
needs_vllm = pytest.mark.skipif(ROOT is None, reason="vLLM is not installed")
INPLACE = "model_executor/model_loader/reload/inplace.py"
PATCH = "model_executor/model_loader/checkpoint_weight_patch.py"


@pytest.fixture
def fake_vllm(tmp_path: Path) -> Path:
    """A copy of every vLLM source file the table names (and the package __init__s)."""
    assert ROOT is not None
    dest = tmp_path / "vllm"
    for module in {r.module for r in TABLE}:
        src = drift._module_file(ROOT, module)
        assert src is not None, module
        rel = src.relative_to(ROOT)
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(src, dest / rel)
    return dest


# ---- the real vLLM ------------------------------------------------------------------------------

@needs_vllm
def test_the_table_matches_the_installed_vllm_source():
    assert drift.installed_version() in VERIFIED_VLLM_VERSIONS
    assert drift.check_rows() == []
    report = drift.check_source()
    assert report.clean and report.disabled_keys() == frozenset()


@needs_vllm
@pytest.mark.slow
def test_every_module_importing_a_target_by_name_is_in_the_table():
    names = {r.function for r in TABLE if r.kind is HookKind.FUNCTION}
    found = drift.scan_by_name_imports(names)
    # the scan sees the known importers (module level) and the engines' lazy imports
    seen = {(i.module, i.name, i.top_level) for i in found}
    assert ("vllm.v1.worker.gpu_model_runner", "reload_weights", True) in seen
    assert ("vllm.model_executor.models.expert_substitution", "finalize_layerwise_reload",
            True) in seen
    assert ("vllm.distributed.weight_transfer.nccl_engine", "initialize_layerwise_reload",
            False) in seen
    assert drift.missing_bindings() == []


# ---- planted drift in a copy of the source -----------------------------------------------------

@needs_vllm
def test_a_copy_of_the_source_is_clean(fake_vllm: Path):
    assert drift.check_rows(root=fake_vllm) == []
    assert drift.missing_bindings(root=fake_vllm) == []


@needs_vllm
def test_a_moved_target_goes_red(fake_vllm: Path):
    path = fake_vllm / INPLACE
    path.write_text(path.read_text().replace("def reload_weights(", "def reload_weights_v2("))
    issues = drift.check_rows(root=fake_vllm)
    assert [(i.target, i.key) for i in issues] == [
        ("vllm.model_executor.model_loader.reload.inplace.reload_weights",
         "vllm.model_executor.model_loader.reload.inplace:reload_weights")]
    assert "not defined" in issues[0].problem
    report = drift.check_source(root=fake_vllm, version="0.33.0")
    assert not report.clean
    assert report.disabled_keys() == {"vllm.model_executor.model_loader.reload.inplace:"
                                      "reload_weights"}


@needs_vllm
def test_a_changed_signature_goes_red(fake_vllm: Path):
    path = fake_vllm / PATCH
    text = path.read_text()
    assert "max_chunk_bytes" in text
    path.write_text(text.replace("max_chunk_bytes", "chunk_bytes"))
    issues = drift.check_rows(root=fake_vllm)
    assert len(issues) == 1 and "load_checkpoint_weight_patches" in issues[0].target
    assert "chunk_bytes" in issues[0].problem and "max_chunk_bytes" in issues[0].problem


@needs_vllm
def test_a_dropped_by_name_import_goes_red(fake_vllm: Path):
    path = fake_vllm / "model_executor/models/expert_substitution.py"
    text = path.read_text()
    line = "from vllm.model_executor.model_loader.reload import finalize_layerwise_reload\n"
    assert line in text
    path.write_text(text.replace(line, ""))
    issues = drift.check_rows(root=fake_vllm)
    assert [i.target for i in issues] == [
        "vllm.model_executor.models.expert_substitution.finalize_layerwise_reload"]
    # the function itself is still wrapped where it is defined
    assert drift.DriftReport("0.33.0", issues).disabled_keys() == frozenset()


@needs_vllm
def test_an_extra_by_name_import_goes_red(fake_vllm: Path):
    (fake_vllm / "v1" / "worker" / "new_runner.py").write_text(
        "from vllm.model_executor.model_loader.reload.inplace import reload_weights\n")
    # a re-export chain: imported by name from a module that itself imported it by name
    (fake_vllm / "v1" / "worker" / "spec_runner.py").write_text(
        "from vllm.v1.worker.new_runner import reload_weights as rw\n")
    # a lazy import from a patched module is fine: it reads the wrapper at call time
    (fake_vllm / "v1" / "worker" / "lazy.py").write_text(
        "def f():\n    from vllm.model_executor.model_loader.reload import "
        "initialize_layerwise_reload\n    return initialize_layerwise_reload\n")
    missing = drift.missing_bindings(root=fake_vllm)
    assert [(m.module, m.name, m.source) for m in missing] == [
        ("vllm.v1.worker.new_runner", "reload_weights",
         "vllm.model_executor.model_loader.reload.inplace"),
        ("vllm.v1.worker.spec_runner", "reload_weights", "vllm.v1.worker.new_runner"),
    ]


# ---- version check and strict mode -------------------------------------------------------------

def test_strict_mode_refuses_an_unknown_version_unless_allowed(monkeypatch, caplog):
    report = drift.DriftReport("0.99.0")
    monkeypatch.delenv(drift.ALLOW_ENV, raising=False)
    with pytest.raises(drift.VllmDriftError, match="DG060") as err:
        drift.preflight("strict", report)
    assert isinstance(err.value, DerivgraphError)
    assert "0.99.0" in str(err.value) and drift.ALLOW_ENV in str(err.value)
    monkeypatch.setenv(drift.ALLOW_ENV, "1")
    with caplog.at_level(logging.WARNING, logger="vllm_integration.drift"):
        assert drift.preflight("strict", report) is report
    assert [r.levelno for r in caplog.records] == [logging.WARNING]
    # outside strict mode: one warning, no refusal
    monkeypatch.delenv(drift.ALLOW_ENV)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="vllm_integration.drift"):
        drift.preflight("refill", report)
    assert len(caplog.records) == 1 and "0.99.0" in caplog.records[0].getMessage()


def test_one_warning_names_every_target_that_cannot_be_wrapped(caplog):
    issues = [drift.DriftIssue("vllm.a.f", "not defined here", "vllm.a:f"),
              drift.DriftIssue("vllm.b.g", "signature (x) != verified (y)", "vllm.b:g")]
    with caplog.at_level(logging.WARNING, logger="vllm_integration.drift"):
        drift.preflight("refill", drift.DriftReport("0.33.0", issues))
    assert len(caplog.records) == 1
    text = caplog.records[0].getMessage()
    assert "2 hook target(s)" in text and "vllm.a.f" in text and "vllm.b.g" in text


@needs_vllm
def test_register_refuses_to_start_in_strict_mode_on_an_unverified_vllm(monkeypatch,
                                                                         fresh_hooks):
    from vllm_integration.config import MODE_ENV
    from vllm_integration.plugin import register

    monkeypatch.setattr(hook_table, "installed_version", lambda package="vllm": "0.34.1")
    monkeypatch.setenv(MODE_ENV, "strict")
    monkeypatch.delenv(drift.ALLOW_ENV, raising=False)
    with pytest.raises(drift.VllmDriftError, match="0.34.1"):
        register()
    assert not hooks.is_installed()
    monkeypatch.setenv(drift.ALLOW_ENV, "1")
    register()
    assert hooks.is_installed()


# ---- runtime signature check (monkeypatched module objects) -----------------------------------

def _module(name: str, **attrs) -> ModuleType:
    module = ModuleType(name)
    for k, v in attrs.items():
        setattr(module, k, v)
    return module


def test_a_wrapper_falls_back_to_the_original_when_the_signature_changed(monkeypatch, caplog,
                                                                         fresh_hooks):
    sig = ("vllm_config", "model", "weights_iterator", "weights_path", "is_checkpoint_format")

    def reload_weights(vllm_config, model, weights, *, fmt=True):  # noqa: ANN001, ANN202
        return "original"

    def process_weights_after_loading(model, model_config, target_device):  # noqa: ANN001, ANN202
        return "post-load"

    home = _module("dg_fake_vllm_home", reload_weights=reload_weights,
                   process_weights_after_loading=process_weights_after_loading)
    user = _module("dg_fake_vllm_user", reload_weights=reload_weights,
                   process_weights_after_loading=process_weights_after_loading)
    monkeypatch.setitem(sys.modules, home.__name__, home)
    monkeypatch.setitem(sys.modules, user.__name__, user)
    table = (
        HookRow(home.__name__, "reload_weights", HookKind.FUNCTION, sig, home.__name__),
        HookRow(user.__name__, "reload_weights", HookKind.BINDING, sig, home.__name__),
        HookRow(home.__name__, "process_weights_after_loading", HookKind.FUNCTION,
                ("model", "model_config", "target_device"), home.__name__),
        HookRow(user.__name__, "process_weights_after_loading", HookKind.BINDING,
                ("model", "model_config", "target_device"), home.__name__),
        HookRow(home.__name__, "finalize_layerwise_reload", HookKind.FUNCTION,
                ("args", "kwargs"), home.__name__),  # planted: the target moved away
    )
    with caplog.at_level(logging.WARNING, logger="vllm_integration.hooks"):
        hooks.install(table=table)
    # the drifted target and its binding keep vLLM's function; the matching one is wrapped
    assert home.reload_weights is reload_weights and user.reload_weights is reload_weights
    assert getattr(home.process_weights_after_loading, "__derivgraph_wrapper__", False)
    assert user.process_weights_after_loading is home.process_weights_after_loading
    left = hooks.unwrapped()
    assert "signature (vllm_config, model, weights, fmt)" in left[f"{home.__name__}:reload_weights"]
    assert "not found" in left[f"{home.__name__}:finalize_layerwise_reload"]
    messages = [r.getMessage() for r in caplog.records]
    assert any("reload_weights left unwrapped" in m and "original function" in m
               for m in messages)
    assert home.reload_weights(None, None, None) == "original"


def test_disabled_rows_are_left_alone(monkeypatch, fresh_hooks):
    def process_weights_after_loading(model, model_config, target_device):  # noqa: ANN001, ANN202
        return None

    home = _module("dg_fake_vllm_home2",
                   process_weights_after_loading=process_weights_after_loading)
    monkeypatch.setitem(sys.modules, home.__name__, home)
    row = HookRow(home.__name__, "process_weights_after_loading", HookKind.FUNCTION,
                  ("model", "model_config", "target_device"), home.__name__)
    hooks.install(table=(row,), disabled=[row.key])
    assert home.process_weights_after_loading is process_weights_after_loading
    assert "drift check" in hooks.unwrapped()[row.key]
