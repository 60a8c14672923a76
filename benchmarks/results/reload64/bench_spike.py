"""The vLLM reload bench (``benchmarks/bench_vllm_reload.py``, same options) with the plan's
refill replaced by the straight-line spike (:func:`steady_arms._make_straight`; not exact) from
the plugin's fourth refill on (the first three by the library, which sets up the state the
spike reads): the ceiling of the "straight-line refill" route on the judged figure.

    PYTHONPATH=. python3 benchmarks/results/reload64/bench_spike.py --clock cpu --repeat 1001 \
        --json OUT.json
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))


def main() -> None:
    import steady_arms

    from vllm_integration import completion
    from vllm_integration.reload_bench import main as bench

    run_plan = completion._run_plan
    calls = [0]

    def spiked(plan: Any, layerwise: bool, mode: str, updated: Any) -> Any:
        calls[0] += 1
        if calls[0] == 4 and mode == "refill":
            steady_arms._STATE["plan"] = plan
            steady_arms._straight()  # from now on: plan.refill is the spike
        return run_plan(plan, layerwise, mode, updated)

    completion._run_plan = spiked
    bench(sys.argv[1:])
    print(f"spike fallbacks {len(steady_arms._FALLBACKS)}", file=sys.stderr)


if __name__ == "__main__":
    os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
    main()
