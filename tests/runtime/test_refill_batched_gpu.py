"""The batched refill and the captured run on CUDA (``pytest -m gpu``).

DeepSeek-shaped workload (scaled down): the engine's post-load step rebuilds every derived
tensor; ``plan.refill()`` takes the fresh values through the holder accessors (one
``_foreach_copy_``, no per-entry walk) and the captured pass replayed by ``plan.run()`` then
reads the startup storage: A -> B -> A with different weights, bit-exact with a cold start,
0 moved, 0 bytes allocated by the replay.
"""

from __future__ import annotations

import pytest
import torch

from derivgraph import compile_plan
from derivgraph.tools.deepseek_workload import DeepseekModel, deepseek_specs

pytestmark = pytest.mark.gpu
SCALE, LAYERS, EXPERTS = 1 / 64, 6, 32


def _cold(seed: int) -> DeepseekModel:
    model = DeepseekModel("cuda", SCALE, LAYERS, EXPERTS)
    model.reload(seed)
    model.post_load()
    return model


def test_batched_refill_then_captured_replay_matches_a_cold_start(per_entry_spy):
    model = _cold(0)
    plan = compile_plan(model, deepseek_specs())
    plan.capture()
    startup = {k: (e.storage, e.startup_ptr) for k, e in plan.entries.items()}
    plan.refill()
    per_entry_spy.clear()
    for seed in (1, 0, 1):
        cold = _cold(seed)
        model.reload(seed)
        model.post_load()  # the engine's naive step: new tensors everywhere
        report = plan.refill(verify=True)
        assert report.moved == [] and report.taken_from_engine == len(startup)
        model.reload(seed)  # in place again: the captured pass recomputes from the sources
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        report = plan.run(verify=True)
        torch.cuda.synchronize()
        assert torch.cuda.max_memory_allocated() - base == 0
        assert report.replayed and report.moved == []
        for key, (obj, ptr) in startup.items():
            owner, _, name = key.rpartition(".")
            assert model.get_submodule(owner).__dict__[name] is obj and obj.data_ptr() == ptr
            assert torch.equal(obj, getattr(cold.get_submodule(owner), name)), key
    assert per_entry_spy == []
