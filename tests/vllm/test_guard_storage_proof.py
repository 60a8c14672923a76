"""The guard's startup tensors proven at their addresses by the pass's own last check, through
vLLM's real reload code on CPU: the plugin passes the guard's tensors to the plan's refill
(``after``), the verified pass checks them with its own storages in one check, and the
guard's restore then skips its own check of them (``storage_kept``). A guarded tensor that
something re-points during the reload fails that joint check, so the guard checks and reports it
as before. Canaries are recorded in ``benchmarks/results/reload62/NOTES.md``."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("vllm")

from derivgraph.errors import RecaptureRequired  # noqa: E402
from derivgraph.guard.guard import Guard  # noqa: E402
from tests.fixtures import vllm_models as vm  # noqa: E402
from vllm_integration import completion, session  # noqa: E402

pytestmark = pytest.mark.vllm

A, B = vm.checkpoint(0), vm.checkpoint(1)


def _reload(model, weights):  # noqa: ANN001 - reload_weights, checkpoint format (layerwise)
    from vllm.model_executor.model_loader.reload import inplace

    inplace.reload_weights(vm.VLLM_CONFIG, model, iter(weights.items()), None, True)


def _own_checks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the guard's own checks of its startup tensors' addresses."""
    calls: list[int] = []
    kept = Guard.storage_kept
    monkeypatch.setattr(Guard, "storage_kept", lambda self: calls.append(1) or kept(self))
    return calls


def _guarded_weight(state) -> tuple[str, torch.Tensor]:  # noqa: ANN001
    """A weight the guard keeps at its address that is no source of the plan."""
    sources = set(state.plan.tensors.sources)
    entry = next(e for e in state.guard._moved if not set(e.paths) & sources)
    return entry.paths[0], entry.tensor


@pytest.mark.parametrize("mode", ["refill", "strict"])
def test_a_clean_reload_proves_the_guards_tensors_by_the_pass(monkeypatch, mode):
    with vm.derivgraph_hooks(mode=mode):
        model = vm.build(A)
        state = session.state_for(model)
        calls = _own_checks(monkeypatch)
        for weights in (B, A, B):
            _reload(model, weights)
            last = state.counters.last
            assert last["report"]["moved"] == [] and last["guard"]["recapture"] == []
        assert state.plan.holders._after_joint[1] is state.guard.addresses  # passed as after
        assert calls == []  # one joint check per reload answered for both
        assert state.guard.storage_kept()


def _repointing(monkeypatch: pytest.MonkeyPatch, tensor: torch.Tensor) -> None:
    """The next reload re-points ``tensor`` (``.data =``, the same values) after the engine's
    post-load step, before the plan's pass."""
    run_plan = completion._run_plan

    def repoint(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        tensor.data = tensor.detach().clone()
        monkeypatch.setattr(completion, "_run_plan", run_plan)
        return run_plan(*args, **kwargs)

    monkeypatch.setattr(completion, "_run_plan", repoint)


def test_a_repointed_guarded_tensor_is_still_found_by_the_guard(monkeypatch):
    with vm.derivgraph_hooks(mode="refill"):
        model = vm.build(A)
        state = session.state_for(model)
        _reload(model, B)
        path, tensor = _guarded_weight(state)
        calls = _own_checks(monkeypatch)
        _repointing(monkeypatch, tensor)
        _reload(model, A)
        assert state.plan.holders.after_checked is None
        assert calls == [1]  # the joint check failed: the guard checked its own
        recapture = state.counters.last["guard"]["recapture"]
        # a weight is never written: its slot is reported
        assert [c.split(":")[0] for c in recapture] == [path]
        assert state.counters.last["report"]["moved"] == []


def test_strict_refuses_a_repointed_guarded_tensor(monkeypatch):
    with vm.derivgraph_hooks(mode="strict"):
        model = vm.build(A)
        state = session.state_for(model)
        _reload(model, B)
        path, tensor = _guarded_weight(state)
        _repointing(monkeypatch, tensor)
        with pytest.raises(RecaptureRequired, match=path.replace(".", r"\.")):
            _reload(model, A)
