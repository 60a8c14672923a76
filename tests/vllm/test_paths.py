"""Reload paths beyond layerwise / kernel format / weight transfer, through vLLM's real code.

* level-1 and level-2 sleep / wake: vLLM's own ``Worker.sleep`` and ``Worker.wake_up`` (buffer
  save and restore, tags, the sleep-mode backend protocol) on a worker whose sleep-mode backend
  is a CPU stand-in for ``CuMemBackend`` (see :class:`DiscardingBackend`);
* ``collective_rpc`` entry points: vLLM's ``run_method`` (what every worker runs for an RPC)
  with a method name (``reload_weights`` through the real ``Worker.reload_weights`` and
  ``GPUModelRunner.reload_weights``, whose by-name binding the hooks wrap), and with a callable
  (what ``LLM.apply_model`` and callables sent to ``collective_rpc`` become);
* ``model.load_weights`` on a live model (no LoRA).

The oracle everywhere: a census keeps every tensor's object and address (0 moved), every
tensor equals a cold start (0 stale), and a graph captured at startup replays bit-exactly.
"""

from __future__ import annotations

import types
from types import SimpleNamespace

import pytest
import torch
from torch import nn

pytest.importorskip("vllm")

from derivgraph.tools.forward_capture import capture  # noqa: E402
from tests.fixtures import vllm_models as vm  # noqa: E402
from vllm_integration import session  # noqa: E402
from vllm_integration.snapshot import compare, snapshot  # noqa: E402
from vllm_integration.worker_extension import DerivgraphWorkerExtension  # noqa: E402

pytestmark = [pytest.mark.vllm, pytest.mark.slow]  # imports vLLM's GPU worker (~1 min)

X = torch.randn(3, vm.H, generator=torch.Generator().manual_seed(7))
A, B = vm.checkpoint(0), vm.checkpoint(1)


@pytest.fixture(autouse=True)
def _no_accelerator(monkeypatch):
    monkeypatch.setattr(torch.accelerator, "synchronize", lambda *a, **k: None)
    monkeypatch.setattr(torch.accelerator, "get_memory_info", lambda *a, **k: (1 << 30, 2 << 30))


@pytest.fixture(scope="module")
def cold():
    with vm.derivgraph_hooks(enabled=False):
        models = {"A": vm.build(A), "B": vm.build(B)}
    return {k: (m, capture(m, X.clone()).replay().clone()) for k, m in models.items()}


def _sleep_backend_class():
    from vllm.device_allocator.sleep_mode_backend import SleepModeBackend

    class DiscardingBackend(SleepModeBackend):
        """A CPU stand-in for ``CuMemBackend`` over the "weights" pool of one model.

        Level 1 offloads the pool and restores it on resume (contents kept). Level 2 discards
        it: every tensor the model load allocated loses its contents (NaN, or -7 for integers),
        except the parameters: on a GPU, vLLM saves ``sleep_preserve_parameter_names`` to host
        and copies them back in ``wake_up``; it skips CPU tensors (``not param.is_cpu``), so
        here the backend leaves parameters alone, which is what vLLM's save/restore achieves on
        a GPU. Buffers are discarded here and restored by vLLM's own ``wake_up``.
        """

        def __init__(self, model: nn.Module):
            super().__init__()
            self.model = model
            self.offloaded: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}

        def _pool(self) -> list[torch.Tensor]:
            tensors = {id(t): t for t in vm.tensors_by_path(self.model).values()}
            params = {p.untyped_storage().data_ptr() for p in self.model.parameters()}
            return [t for t in tensors.values()
                    if not isinstance(t, nn.Parameter)
                    and t.untyped_storage().data_ptr() not in params]

        def suspend(self, level: int = 1) -> None:
            self._state = "SUSPENDED"
            for t in self._pool():
                if level == 1:
                    self.offloaded[id(t)] = (t, t.clone())
                t.fill_(float("nan") if t.is_floating_point() else -7)

        def resume(self, tags: list[str] | None = None) -> None:
            if tags is None or "weights" in tags:
                for t, saved in self.offloaded.values():
                    t.copy_(saved)
                self.offloaded.clear()
            self._state = "RUNNING"

    return DiscardingBackend


def _worker(model: nn.Module):
    """vLLM's GPU Worker (with derivgraph's extension mixed in) around ``model``."""
    from vllm.v1.worker.gpu_model_runner import GPUModelRunner
    from vllm.v1.worker.gpu_worker import Worker

    class ExtendedWorker(Worker, DerivgraphWorkerExtension):
        """What ``worker_extension_cls`` makes of vLLM's Worker."""

    model_config = SimpleNamespace(**vars(vm.MODEL_CONFIG), sleep_preserve_parameter_names=["*"],
                                   enable_nccl_comm_suspend=False)
    runner = SimpleNamespace(model=model, get_model=lambda: model, get_draft_model=lambda: None,
                             vllm_config=vm.VLLM_CONFIG, reset_lora_state=lambda: None,
                             reset_encoder_cache=lambda: None, reset_mm_cache=lambda: None)
    runner.reload_weights = types.MethodType(GPUModelRunner.reload_weights, runner)
    worker = object.__new__(ExtendedWorker)
    worker.model_runner = runner
    worker.vllm_config = SimpleNamespace(**{**vars(vm.VLLM_CONFIG),
                                            "model_config": model_config})
    worker.model_config = model_config
    worker._sleep_mode_backend = _sleep_backend_class()(model)
    worker._sleep_saved_buffers = {}
    worker._sleep_saved_draft_buffers = {}
    worker._sleep_saved_parameters = {}
    return worker


class _Startup:
    def __init__(self) -> None:
        self.model = vm.build(A)
        self.graph = capture(self.model, X.clone())
        self.before = snapshot(self.model)
        self.worker = _worker(self.model)

    def moved(self) -> list[str]:
        plan = session.plan_for(self.model)
        result = compare(self.before, self.model, plan.declared().values() if plan else ())
        return result.moved + result.undeclared

    def exact(self, cold, name: str) -> bool:  # noqa: ANN001
        model, out = cold[name]
        return (self.moved() == [] and vm.differing(self.model, model) == []
                and torch.equal(self.graph.replay(), out))


# ---- sleep / wake -------------------------------------------------------------------------------

def test_without_plugin_level_2_wake_leaves_plain_derived_tensors_discarded(cold):
    with vm.derivgraph_hooks(enabled=False):
        s = _Startup()
        s.worker.sleep(level=2)
        s.worker.wake_up()
    bad = vm.differing(s.model, cold["A"][0])
    assert any(p.endswith("proj.weight_t") for p in bad)
    assert any(p.endswith("fused_experts._g1_scale_c") for p in bad)
    assert any(p.endswith("moe_quant_config._a1.alpha_or_gscale") for p in bad)
    assert "_stacked_w13_scale" in bad
    # vLLM itself restores buffers (saved to host before level 2) ...
    assert not any(p.endswith(("_scale_inv", "_q_scale_inv")) for p in bad)
    assert s.moved() == []  # ... and nothing moved: the storage is there, its contents are not
    assert torch.isnan(s.graph.replay()).any()


@pytest.mark.parametrize("level", [1, 2])
def test_wake_up_recomputes_every_declared_tensor(cold, level):
    with vm.derivgraph_hooks():
        s = _Startup()
        s.worker.sleep(level=level)
        s.worker.wake_up(tags=["weights"])
        state = session.state_for(s.model)
        assert state.counters.last["session"] == "wake-up"
        assert state.counters.recomputes == 1 and state.counters.tensors_written > 0
        assert s.exact(cold, "A")
        s.worker.wake_up(tags=["kv_cache"])  # no weights woke: nothing to do
        assert state.counters.reloads == 1


def test_level_2_sleep_then_reload_rpc_matches_a_cold_start_of_the_new_weights(cold):
    """The RL sequence: sleep(2), wake weights, reload_weights through collective_rpc."""
    from vllm.v1.serial_utils import run_method

    with vm.derivgraph_hooks(mode="strict"):
        s = _Startup()
        s.worker.sleep(level=2)
        s.worker.wake_up(tags=["weights"])
        run_method(s.worker, "reload_weights", (),
                   {"weights_iterator": iter(B.items()), "is_checkpoint_format": True})
        assert s.exact(cold, "B")
        run_method(s.worker, "reload_weights", (), {"weights_iterator": iter(A.items())})
        assert s.exact(cold, "A")
        counters = session.state_for(s.model).counters
    assert counters.reloads == 3 and counters.strict_failures == 0


# ---- collective_rpc callables and live load_weights ---------------------------------------------

def _write_by_hand(worker, name: str, value: torch.Tensor) -> None:  # noqa: ANN001
    """A callable sent through collective_rpc: runs in the worker with the worker as self."""
    with torch.no_grad():
        worker.model_runner.get_model().get_parameter(name).copy_(value)


def test_rpc_callable_writing_weights_then_derivgraph_recompute(cold):
    from vllm.v1.serial_utils import run_method

    name = "layers.1.moe.w13_weight_scale"
    with vm.derivgraph_hooks():
        s = _Startup()
        w = cold["A"][0].get_parameter(name).detach() * 3
        run_method(s.worker, _write_by_hand, (name, w), {})
        experts = s.model.layers[1].moe.quant_method.moe_kernel.fused_experts
        assert not torch.equal(experts._g1_alphas, w * s.model.layers[1].moe.w13_input_scale)
        out = run_method(s.worker, "derivgraph_recompute", (), {"names": [name]})
        assert out["models"][0]["mode"] == "recompute"
        assert 0 < out["models"][0]["written"] < 10
        assert torch.equal(experts._g1_alphas, w * s.model.layers[1].moe.w13_input_scale)
        assert torch.equal(s.model._stacked_w13_scale[1], w)
        assert s.moved() == []


def _load_layer_scale(model: nn.Module, weights: dict[str, torch.Tensor]) -> None:
    """What ``LLM.apply_model(fn)`` runs in every worker: ``fn(model)``."""
    model.load_weights([(k, v) for k, v in weights.items()])


@pytest.mark.parametrize("enabled", [False, True])
def test_load_weights_on_a_live_model(cold, enabled):
    # load_weights writes checkpoint format: the per-expert input scales (reduced to one by the
    # post-load step) cannot be loaded into a live model; they keep A's values, so the
    # reference for "B" is a cold start of B with A's input scales
    names = [n for n in B if "input_scale" not in n]
    mixed = {**B, **{n: A[n] for n in A if "input_scale" in n}}
    with vm.derivgraph_hooks(enabled=False):
        ref = vm.build(mixed)
    refs = {"B": (ref, capture(ref, X.clone()).replay().clone()), "A": cold["A"]}
    with vm.derivgraph_hooks(enabled=enabled):
        s = _Startup()
        for step, weights in enumerate(({n: B[n] for n in names}, {n: A[n] for n in names})):
            _load_layer_scale(s.model, weights)
            if not enabled:
                bad = vm.differing(s.model, ref)
                assert any(p.endswith("fused_experts._g1_scale_c") for p in bad)
                assert "_stacked_w13_scale" in bad
                assert any(p.endswith("proj.weight_t") for p in bad)
                assert not torch.equal(s.graph.replay(), refs["B"][1])
                return
            assert s.exact(refs, "BA"[step])
        counters = session.state_for(s.model).counters
    assert counters.reloads == counters.in_place == counters.recomputes == 2
    assert counters.last["session"] == "load-weights"
