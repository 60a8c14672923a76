"""vLLM's weight-transfer engines (start / update / finish) with derivgraph's hooks.

The engines are vLLM's own classes — ``NCCLWeightTransferEngine`` (checkpoint format: its
start / finish import ``initialize/finalize_layerwise_reload`` lazily from the ``reload``
package) and ``SparseNCCLWeightTransferEngine`` (start / finish are no-ops; patches go through
``load_checkpoint_weight_patches``) — with only the NCCL transport replaced by local tensors.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

pytest.importorskip("vllm")

from derivgraph.tools.forward_capture import capture  # noqa: E402
from tests.fixtures import vllm_models as vm  # noqa: E402
from vllm_integration import session  # noqa: E402
from vllm_integration.snapshot import compare, snapshot  # noqa: E402

pytestmark = pytest.mark.vllm

X = torch.randn(3, vm.H, generator=torch.Generator().manual_seed(7))
A, B = vm.checkpoint(0), vm.checkpoint(1)
VLLM_CONFIG = SimpleNamespace(parallel_config=None, model_config=vm.MODEL_CONFIG)


@pytest.fixture(autouse=True)
def _no_accelerator(monkeypatch):
    monkeypatch.setattr(torch.accelerator, "synchronize", lambda *a, **k: None)


def _engines():
    from vllm.distributed.weight_transfer import sparse_nccl_engine
    from vllm.distributed.weight_transfer.nccl_engine import NCCLWeightTransferEngine
    from vllm.model_executor.model_loader.checkpoint_weight_patch import CheckpointWeightPatch

    class LocalNCCLEngine(NCCLWeightTransferEngine):
        """vLLM's NCCL engine; the broadcast replaced by a lookup in ``self.wire``."""

        wire: dict[str, torch.Tensor] = {}

        def receive_weights(self, update_info) -> None:  # noqa: ANN001
            for name in update_info.names:
                self.model.load_weights([(name, self.wire[name])])

    class LocalSparseEngine(sparse_nccl_engine.SparseNCCLWeightTransferEngine):
        """vLLM's sparse NCCL engine; the broadcast replaced by ``self.wire``."""

        wire: dict[str, tuple[torch.Tensor, torch.Tensor]] = {}

        def receive_weights(self, update_info) -> None:  # noqa: ANN001
            patches = []
            for name, shape in zip(update_info.names, update_info.shapes):
                indices, values = self.wire[name]
                patches.append(CheckpointWeightPatch(name, tuple(shape), values.dtype, values,
                                                     indices))
            sparse_nccl_engine.load_checkpoint_weight_patches(self.model, patches)

    return LocalNCCLEngine, LocalSparseEngine


def _ipc_engine():
    from vllm.distributed.weight_transfer.ipc_engine import IPCWeightTransferEngine

    class LocalIPCEngine(IPCWeightTransferEngine):
        """vLLM's CUDA-IPC engine; rebuilding tensors from IPC handles replaced by ``wire``."""

        wire: dict[str, torch.Tensor] = {}

        def receive_weights(self, update_info) -> None:  # noqa: ANN001
            self.model.load_weights([(n, self.wire[n]) for n in update_info.names])

    return LocalIPCEngine


def _info(weights: dict[str, torch.Tensor], **extra) -> dict:
    return {"names": list(weights), "dtype_names": ["float32"] * len(weights),
            "shapes": [list(t.shape) for t in weights.values()], **extra}


def _cold(weights: dict[str, torch.Tensor]):
    with vm.derivgraph_hooks(enabled=False):
        model = vm.build(weights)
    return model, capture(model, X.clone()).replay().clone()


def _session(engine, info: dict) -> None:  # noqa: ANN001 - what GPUWorker drives over RPC
    engine.start_weight_update()
    engine.update_weights(info)
    engine.finish_weight_update()


@pytest.mark.parametrize("backend", ["nccl", "ipc"])
def test_checkpoint_format_engine_refills_after_finish(backend):
    engine_cls = _engines()[0] if backend == "nccl" else _ipc_engine()
    cold_b, cold_a = _cold(B), _cold(A)
    with vm.derivgraph_hooks():
        model = vm.build(A)
        graph = capture(model, X.clone())
        before = snapshot(model)
        engine = engine_cls(SimpleNamespace(backend="local"), VLLM_CONFIG, torch.device("cpu"),
                            model)
        for weights, (ref, out) in ((B, cold_b), (A, cold_a)):
            engine.wire = weights
            extra = {"ipc_handles": [{} for _ in weights]} if backend == "ipc" else {}
            _session(engine, _info(weights, **extra))
            assert compare(before, model, session.plan_for(model).declared().values()).moved == []
            assert vm.differing(model, ref) == []
            assert torch.equal(graph.replay(), out)
        counters = session.state_for(model).counters
    assert counters.reloads == counters.layerwise == counters.refills == 2


def test_checkpoint_format_engine_without_plugin_moves_tensors():
    nccl, _ = _engines()
    _, out_b = _cold(B)
    with vm.derivgraph_hooks(enabled=False):
        model = vm.build(A)
        graph = capture(model, X.clone())
        before = snapshot(model)
        engine = nccl(SimpleNamespace(backend="local"), VLLM_CONFIG, torch.device("cpu"), model)
        engine.wire = B
        _session(engine, _info(B))
    assert compare(before, model).moved != []
    assert not torch.equal(graph.replay(), out_b)


def _patch_layer0_scale(scale: torch.Tensor) -> tuple[dict, dict]:
    name = "layers.0.moe.w13_weight_scale"
    indices = torch.tensor([0, 2], dtype=torch.int64)
    values = scale.flatten()[indices] * 2 + 1
    patched = dict(A)
    patched[name] = scale.clone().flatten().index_put((indices,), values).reshape(scale.shape)
    info = {"names": [name], "dtype_names": ["float32"], "shapes": [list(scale.shape)],
            "num_updates_list": [2]}
    return {name: (indices, values)}, (info, patched)


@pytest.mark.parametrize("enabled", [True, False])
def test_sparse_patch_engine_recomputes_dependents_in_place(enabled):
    _, sparse = _engines()
    wire, (info, patched) = _patch_layer0_scale(A["layers.0.moe.w13_weight_scale"])
    ref, out = _cold(patched)
    with vm.derivgraph_hooks(enabled=enabled):
        model = vm.build(A)
        graph = capture(model, X.clone())
        before = snapshot(model)
        engine = sparse(SimpleNamespace(backend="local"), VLLM_CONFIG, torch.device("cpu"),
                        model)
        engine.wire = wire
        _session(engine, info)
        assert compare(before, model).moved == []  # sparse patches never move anything ...
        stale = vm.differing(model, ref)
        if not enabled:  # ... but without derivgraph every derived tensor of it is stale
            assert any(p.endswith("fused_experts._g1_alphas") for p in stale)
            assert "_stacked_w13_scale" in stale
            assert not torch.equal(graph.replay(), out)
            return
        assert stale == []
        assert torch.equal(graph.replay(), out)
        state = session.state_for(model)
    last = state.counters.last
    assert last["session"] == "weight-transfer" and not last["layerwise"]
    assert last["loaded_names"] == 1  # the runtime name load_weights reported
    assert last["report"]["mode"] == "recompute"
    assert 0 < last["report"]["written"] < 10  # only layer 0's dependents
