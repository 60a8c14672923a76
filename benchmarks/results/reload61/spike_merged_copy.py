"""Spike (no library change): what one ``_foreach_copy_`` for the take's copies and the partial
pass's copies would save on the tiny vLLM Llama's refill, measured in situ.

One process; each iteration is an ``off`` reload then a plugin (refill) reload, the plugin reload
alternating between the library as it is (A) and a patched refill (B) where the take
(``engine.Taken.copy``, one ``_foreach_copy_`` of the 4 engine scalars) copies nothing and the
partial pass instead runs ``torch._foreach_copy_(taken.ours + copies, taken.theirs + group)``:
one call for the 4 + 10 pairs. Valid for this plan only (no pass input is a taken target: the
stage rows read ``attn._q/_k/_v_scale``, the take writes ``_k/_v_scale_cpu``); the values are
checked equal to A's after the run. Thread CPU clock; prints per arm min / q25 / median of
``plan.refill`` and of ``plugin - off``, and in how many of K blocks B's median is lower.

    PYTHONPATH=. python3 benchmarks/results/reload61/spike_merged_copy.py 1000
"""

from __future__ import annotations

import gc
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ["VLLM_TARGET_DEVICE"] = "cpu"
os.environ.setdefault("VLLM_PLUGINS", "derivgraph")


def _q(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def main(rounds: int, blocks: int = 8) -> None:
    import torch

    from derivgraph.runtime import engine
    from vllm_integration.tiny_llama import SPECS, checkpoint, cold_start, tiny_llama_vllm

    os.environ.setdefault("DERIVGRAPH_SPECS", str(SPECS))
    torch.set_num_threads(1)
    now = time.thread_time
    with tempfile.TemporaryDirectory() as tmp, tiny_llama_vllm(Path(tmp)) as (mc, vc):
        from vllm.model_executor.model_loader.reload import inplace

        from vllm_integration import session

        weights = [checkpoint(0), checkpoint(1)]
        model = cold_start(mc, vc, weights[0], "")
        plan = session.plan_for(model)
        assert plan is not None
        bindings = plan.bindings
        pass_for, copy = bindings["pass_for"], engine.Taken.copy
        pending: list[Any] = []
        shapes: list[tuple[int, int, int]] = []
        merges: list[int] = []
        state = {"merged": False}

        def stash(self: Any) -> None:
            shapes.append((len(self.flat), len(self.spans), len(self.ours)))
            if state["merged"] and not self.flat and len(self.spans) == 1:
                merges.append(1)
                pending.append(self)
                return
            copy(self)

        merged_fns: dict[int, Any] = {}

        def merged_pass_for(rest: Any) -> Any:
            fn = pass_for(rest)
            if not state["merged"]:
                return fn
            merged = merged_fns.get(id(fn))
            if merged is None:
                g = fn.__globals__
                copies, group = g["copies"], g["group"]

                def merged() -> None:
                    taken = pending.pop()
                    torch._foreach_copy_(taken.ours + copies, taken.theirs + group)
                merged.__name__ = fn.__name__
                merged_fns[id(fn)] = merged
            return merged

        engine.Taken.copy = stash
        bindings["pass_for"] = merged_pass_for
        refill, spent = type(plan).refill, []

        def timed_refill(self: Any, **k: Any) -> Any:
            t = now()
            try:
                return refill(self, **k)
            finally:
                spent.append((now() - t) * 1e6)
        type(plan).refill = timed_refill

        def reload(i: int, mode: str) -> float:
            os.environ["DERIVGRAPH_VLLM_MODE"] = mode
            items = iter(weights[i % 2].items())
            start = now()
            with torch.no_grad():
                inplace.reload_weights(vc, model, items, None, True)
            return (now() - start) * 1e6

        def values() -> list[torch.Tensor]:
            return [e.storage.clone() for e in plan.entries.values()
                    if isinstance(e.storage, torch.Tensor)]

        for merged in (False, True):  # the same weights: the same values either way
            state["merged"] = merged
            reload(0, "off")
            reload(1, "refill")
            if not merged:
                ref = values()
        got = values()
        assert len(ref) == len(got) and all(torch.equal(a, b) for a, b in zip(ref, got)), \
            "the merged copy wrote other values"
        assert not pending
        out: dict[str, dict[str, list[float]]] = {a: {"refill": [], "paired": []} for a in "AB"}
        spent.clear()
        gc.collect()
        gc.freeze()
        for i in range(2 * rounds):
            arm = "AB"[(i + i // 2) % 2]
            state["merged"] = arm == "B"
            off = reload(i, "off")
            on = reload(i, "refill")
            out[arm]["refill"].append(spent.pop())
            out[arm]["paired"].append(on - off)
            assert not spent and not pending
    print(f"take shapes (flat runs, spans, pairs): {sorted(set(shapes))}; merged reloads "
          f"{len(merges)}")
    print(f"rounds {rounds} an arm, load {os.getloadavg()[0]:.1f}")
    size = rounds // blocks
    for key in ("refill", "paired"):
        a, b = out["A"][key], out["B"][key]
        lower = sum(statistics.median(b[k * size:(k + 1) * size])
                    < statistics.median(a[k * size:(k + 1) * size]) for k in range(blocks))
        print(f"{key:7s} A min/q25/med {min(a):8.1f} {_q(a, 25):8.1f} {statistics.median(a):8.1f}"
              f" | B {min(b):8.1f} {_q(b, 25):8.1f} {statistics.median(b):8.1f}"
              f" | B-A med {statistics.median(b) - statistics.median(a):+7.1f}, q25 "
              f"{_q(b, 25) - _q(a, 25):+7.1f}, min {min(b) - min(a):+7.1f}; "
              f"B lower in {lower} of {blocks} blocks")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1000)
