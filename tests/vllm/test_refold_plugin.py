"""Double-fold detection through the plugin and vLLM's real reload code on CPU: an engine that
folds on every load, with a ``kind: fold`` spec that assumes it folds once, is caught (strict
raises DG083, the default warns on the ``vllm`` logger and folds once); a fold-once engine is
left quiet and folded exactly once per load."""

from __future__ import annotations

import logging

import pytest
import torch
from torch import nn

pytest.importorskip("vllm")

from vllm.model_executor.layers.quantization.base_config import QuantizeMethodBase  # noqa: E402

from derivgraph.errors import FoldReappliedError, Rule  # noqa: E402
from tests.fixtures import vllm_models as vm  # noqa: E402
from vllm_integration import session  # noqa: E402

pytestmark = pytest.mark.vllm

MULTIPLIER = 1.5
LAYERS = 2
SPEC = """
version: 1
specs:
  - name: test-linear-output-multiplier-fold
    target: {module_class: FoldLinear}
    derived:
      - {name: weight, kind: fold, formula: "weight * multiplier",
         config: {multiplier: output_multiplier}}
"""


class FoldMethod(QuantizeMethodBase):
    """Folds ``layer.output_multiplier`` into the weight in its post-load step: on every run
    (``every_load``), or only on the first one (its own fold is spent after it)."""

    every_load = True

    def __init__(self) -> None:
        self.spent = False

    def create_weights(self, layer: nn.Module, *args, **kwargs) -> None:
        vm._param(layer, "weight", vm.H, vm.H)

    def process_weights_after_loading(self, layer: nn.Module) -> None:
        if self.every_load or not self.spent:
            with torch.no_grad():
                layer.weight.mul_(layer.output_multiplier)
        self.spent = True

    def apply(self, layer: nn.Module, x: torch.Tensor, *args, **kwargs) -> torch.Tensor:
        return x @ layer.weight.t()


class FoldLinear(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.output_multiplier = MULTIPLIER
        self.quant_method = FoldMethod()
        self.quant_method.create_weights(self)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.quant_method.apply(self, x)


class FoldModel(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.ModuleList(FoldLinear() for _ in range(LAYERS))

    load_weights = vm.SynModel.load_weights

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x)
        return x


def _checkpoint(seed: int) -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    return {n: torch.randn(p.shape, generator=gen) for n, p in FoldModel().named_parameters()}


A, B = _checkpoint(0), _checkpoint(1)
WEIGHT = "layers.{i}.weight"


def _build(weights: dict[str, torch.Tensor]) -> FoldModel:
    from vllm.model_executor.model_loader import utils
    from vllm.model_executor.model_loader.reload import record_metadata_for_reloading

    model = FoldModel()
    record_metadata_for_reloading(model)
    model.load_weights(weights.items())
    utils.process_weights_after_loading(model, vm.MODEL_CONFIG, torch.device("cpu"))
    return model


def _reload(model: FoldModel, weights: dict[str, torch.Tensor]) -> None:
    from vllm.model_executor.model_loader.reload import inplace

    inplace.reload_weights(vm.VLLM_CONFIG, model, iter(weights.items()), None, True)


@pytest.fixture
def specs(tmp_path):
    folder = tmp_path / "specs"
    folder.mkdir()
    (folder / "fold.yaml").write_text(SPEC)
    return folder


@pytest.fixture
def every_load(monkeypatch):
    monkeypatch.setattr(FoldMethod, "every_load", True)


@pytest.fixture
def fold_once(monkeypatch):
    monkeypatch.setattr(FoldMethod, "every_load", False)


def _folded_once(model: FoldModel, weights: dict[str, torch.Tensor]) -> None:
    for i in range(LAYERS):
        name = WEIGHT.format(i=i)
        torch.testing.assert_close(model.layers[i].weight, weights[name] * MULTIPLIER,
                                   rtol=0, atol=0)


@pytest.mark.usefixtures("every_load")
def test_canary_without_the_plugin_every_load_engine_folds_once_per_load():
    """The fixture's engine really folds on every load: alone, each reload folds once."""
    with vm.derivgraph_hooks(enabled=False):
        model = _build(A)
        _reload(model, B)
    _folded_once(model, B)


@pytest.mark.usefixtures("every_load")
def test_strict_raises_dg083_through_the_plugin(specs):
    with vm.derivgraph_hooks(mode="strict", specs=specs):
        model = _build(A)
        assert len(session.state_for(model).plan.folds) == LAYERS  # the fold spec binds
        with pytest.raises(FoldReappliedError) as err:
            _reload(model, B)
    assert {i.rule for i in err.value.issues} == {Rule.ENGINE_REFOLDED}
    assert "DG083" in str(err.value)
    assert {i.node for i in err.value.issues} == {WEIGHT.format(i=i) for i in range(LAYERS)}


@pytest.mark.usefixtures("every_load")
def test_default_warns_on_the_vllm_logger_and_folds_once(specs, caplog):
    with vm.derivgraph_hooks(mode="refill", specs=specs):
        model = _build(A)
        with caplog.at_level(logging.WARNING, logger="vllm"):
            _reload(model, B)
        _folded_once(model, B)  # not twice: the declared fold is skipped
        with caplog.at_level(logging.WARNING, logger="vllm"):
            _reload(model, A)
    _folded_once(model, A)
    warned = [r for r in caplog.records if "DG083" in r.getMessage()]
    assert len(warned) == 2 * LAYERS
    assert all(r.name.startswith("vllm") and r.levelno == logging.WARNING for r in warned)
    assert WEIGHT.format(i=0) in caplog.text


@pytest.mark.usefixtures("fold_once")
@pytest.mark.parametrize("mode", ["refill", "strict"])
def test_a_fold_once_engine_stays_quiet_and_is_folded_once(specs, caplog, mode):
    with vm.derivgraph_hooks(mode=mode, specs=specs):
        model = _build(A)
        with caplog.at_level(logging.WARNING, logger="vllm"):
            _reload(model, B)  # strict: no DG083 raised
            _reload(model, A)
    assert "DG083" not in caplog.text
    _folded_once(model, A)  # the plan's fold, once per load
