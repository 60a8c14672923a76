"""The vLLM general plugin: cheap, idempotent, every name binding patched, modes, uninstall."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest

pytest.importorskip("vllm")

from vllm_integration import hooks  # noqa: E402
from vllm_integration.config import MODE_ENV  # noqa: E402
from vllm_integration.hook_table import TABLE  # noqa: E402

pytestmark = pytest.mark.vllm

ROOT = Path(__file__).resolve().parents[2]
_ML = "vllm.model_executor.model_loader"
# every (module, attribute) that must end up wrapped: definitions and by-name imports
BINDINGS = [(r.module, r.attribute) for r in TABLE]


def test_the_table_covers_the_known_bindings():
    assert set(BINDINGS) >= {
        (f"{_ML}.utils", "process_weights_after_loading"),
        (f"{_ML}.base_loader", "process_weights_after_loading"),
        (f"{_ML}.reload", "initialize_layerwise_reload"),
        ("vllm.model_executor.models.expert_substitution", "finalize_layerwise_reload"),
        ("vllm.v1.worker.gpu_model_runner", "reload_weights"),
        ("vllm.v1.worker.gpu.model_runner", "reload_weights"),
        ("vllm.distributed.weight_transfer.sparse_nccl_engine", "load_checkpoint_weight_patches"),
        ("vllm.distributed.weight_transfer.base", "WeightTransferEngine.__init__"),
        ("vllm.v1.worker.gpu_worker", "Worker.wake_up"),
        ("vllm.compilation.cuda_graph", "CUDAGraphWrapper.__call__"),
    }
    assert len(BINDINGS) == 24  # 21 + Kimi-K3 pack_front (2 rows) and build_specialized_decode


_CHECK = """
import importlib, json, sys
def wrapped(module, name):
    obj = importlib.import_module(module)
    for part in name.split("."):
        obj = getattr(obj, part)
    return bool(getattr(obj, "__derivgraph_wrapper__", False))
bindings = json.loads(sys.argv[1])
"""


def _python(code: str, *args: str, env: dict[str, str] | None = None) -> dict:
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    full_env.pop(MODE_ENV, None)
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          env=full_env, cwd=ROOT, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_the_plugin_is_declared_as_a_vllm_general_plugin():
    eps = {ep.name: ep.value for ep in entry_points(group="vllm.general_plugins")}
    assert eps.get("derivgraph") == "vllm_integration.plugin:register"


def test_register_is_cheap_and_idempotent():
    out = _python("""
import json, sys, time
start = time.perf_counter()
from vllm_integration.plugin import register
from vllm_integration import hooks
register(); register()
print(json.dumps({"seconds": time.perf_counter() - start,
                  "vllm": sorted(m for m in sys.modules if m == "vllm" or m.startswith("vllm.")),
                  "torch": "torch" in sys.modules, "installed": hooks.is_installed(),
                  "finders": sum(type(f).__name__ == "PostImportHook" for f in sys.meta_path)}))
""")
    assert out["vllm"] == [] and not out["torch"]  # nothing heavy imported
    assert out["installed"] and out["finders"] == 1
    assert out["seconds"] < 2.0


# the model runners import FlashInfer's kernels (a minute on CI): the in-process test below
# covers their bindings; the import hook is the same for every module
LIGHT = [(m, n) for m, n in BINDINGS if not m.startswith("vllm.v1.worker")]


@pytest.mark.slow
def test_vllm_loads_the_plugin_and_every_binding_imported_later_is_patched():
    out = _python(_CHECK + """
from vllm.plugins import load_general_plugins
load_general_plugins()          # what every vLLM process does at startup
load_general_plugins()
from vllm_integration import hooks
result = {f"{m}:{n}": wrapped(m, n) for m, n in bindings}
result["installed"] = hooks.is_installed()
print(json.dumps(result))
""", json.dumps(LIGHT), env={"VLLM_PLUGINS": "derivgraph"})
    assert out.pop("installed")
    assert out == {f"{m}:{n}": True for m, n in LIGHT}


def test_install_patches_modules_already_imported_and_uninstall_restores_them():
    import importlib

    for module, _ in BINDINGS:
        importlib.import_module(module)

    def state() -> dict[str, bool]:
        out = {}
        for module, name in BINDINGS:
            obj = importlib.import_module(module)
            for part in name.split("."):
                obj = getattr(obj, part)
            out[f"{module}:{name}"] = bool(getattr(obj, "__derivgraph_wrapper__", False))
        return out

    was = hooks.is_installed()
    try:
        hooks.uninstall()
        assert not any(state().values())
        assert hooks.install() and not hooks.install()  # the second call is a no-op
        assert all(state().values())
        assert len(hooks.patched_bindings()) == len(BINDINGS)
        hooks.uninstall()
        assert not any(state().values())
    finally:
        if was:
            hooks.install()


def test_mode_switch(monkeypatch):
    from vllm_integration.config import current_mode
    from vllm_integration.plugin import register

    monkeypatch.delenv(MODE_ENV, raising=False)
    assert current_mode() == "refill"
    monkeypatch.setenv(MODE_ENV, "Strict")
    assert current_mode() == "strict"
    monkeypatch.setenv(MODE_ENV, "sometimes")
    with pytest.raises(ValueError, match="off, refill, recompute, strict"):
        register()
    was = hooks.is_installed()
    try:
        hooks.uninstall()
        monkeypatch.setenv(MODE_ENV, "off")
        register()
        assert not hooks.is_installed()
    finally:
        if was:
            hooks.install()


def test_extra_specs_from_the_environment(monkeypatch, tmp_path):
    from derivgraph import SpecValidationError
    from vllm_integration.config import SPECS_ENV, spec_library

    (tmp_path / "extra.yaml").write_text(
        "version: 1\nspecs:\n  - name: extra-spec\n    target: {module_class: Nothing}\n"
        "    derived: [{name: x, kind: attribute, formula: 'ones([1])'}]\n")
    monkeypatch.setenv(SPECS_ENV, os.pathsep.join([str(tmp_path), str(tmp_path / "none")]))
    with pytest.raises(SpecValidationError, match="none, which does not exist"):
        spec_library()  # a missing path is an error, not ignored
    monkeypatch.setenv(SPECS_ENV, str(tmp_path))
    assert "extra-spec" in {s.name for s in spec_library()}
