"""The straight-line spike (:func:`steady_arms._make_straight`) leaves every derived tensor and
scalar of the plan bit-identical to the library's refill of the same weights, and every holder
holding the plan's object: alternating weights, each reload by the spike and then by the
library, compared after each.

    PYTHONPATH=. python3 benchmarks/results/reload64/spike_check.py
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

os.environ["VLLM_TARGET_DEVICE"] = "cpu"
os.environ.setdefault("VLLM_PLUGINS", "derivgraph")
sys.path.insert(0, str(Path(__file__).parent))


def main() -> None:
    import steady_arms
    import torch

    from vllm_integration.tiny_llama import SPECS, checkpoint, cold_start, tiny_llama_vllm

    os.environ.setdefault("DERIVGRAPH_SPECS", str(SPECS))
    with tempfile.TemporaryDirectory() as tmp, tiny_llama_vllm(Path(tmp)) as (mc, vc):
        from vllm.model_executor.model_loader.reload import inplace

        from vllm_integration import session
        weights = [checkpoint(0), checkpoint(1)]
        model = cold_start(mc, vc, weights[0], "")
        os.environ["DERIVGRAPH_VLLM_MODE"] = "refill"
        plan = session.state_for(model).plan
        steady_arms._STATE["plan"] = plan

        def reload(i: int) -> None:
            with torch.no_grad():
                inplace.reload_weights(vc, model, iter(weights[i % 2].items()), None, True)

        def values() -> dict[str, object]:
            out = {}
            for key, e in plan.entries.by_id.items():
                s = e.storage
                out[key] = s.detach().clone() if isinstance(s, torch.Tensor) else s
            return out

        for i in range(6):
            reload(i)
        checked = 0
        for i in range(6, 26):
            undo = steady_arms._straight()
            try:
                reload(i)
            finally:
                undo()
            fast = values()
            reload(i)  # the same weights by the library's refill
            slow = values()
            for key, v in slow.items():
                w = fast[key]
                same = torch.equal(v.view(-1).view(torch.uint8), w.view(-1).view(torch.uint8)) \
                    if isinstance(v, torch.Tensor) else v == w
                assert same, key
                checked += 1
            assert session.state_for(model).counters.moved_last == 0
        print(f"identical: {checked} values over 20 spike reloads, fallbacks "
              f"{len(steady_arms._FALLBACKS)}")


if __name__ == "__main__":
    main()
