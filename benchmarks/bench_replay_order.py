"""Why ``derivgraph bench`` rotates its captured variants: the order effect of a replay (CUDA).

On the DeepSeek-shaped workload, after a reload and an eager pass, it times (1) the public
captured run then the recording replayed alone, (2) the same two the other way round, and
(3) the recording replayed with the host spinning for 0-280 us between the launch and the
wait (does host work that overlaps the replay cost anything?). Medians and minima in ms, as
JSON::

    python3 benchmarks/bench_replay_order.py --repeat 41
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import time
from collections.abc import Callable

import torch

from derivgraph.planner import compile_plan
from derivgraph.tools.bench import _workload


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=41)
    args = parser.parse_args()
    model, specs, reload, _post_load, _layer0 = _workload("cuda", "deepseek", 61, None)
    plan = compile_plan(model, specs)
    plan.run()
    plan.capture()
    torch.cuda.synchronize()
    gc.collect()
    gc.freeze()
    sync, replay = torch.cuda.synchronize, plan._recording.replay

    def eager() -> None:
        plan._captured = False
        try:
            plan.run()
        finally:
            plan._captured = True

    def timed(fn: Callable[[], object]) -> float:
        sync()
        t0 = time.perf_counter()
        fn()
        sync()
        return (time.perf_counter() - t0) * 1e3

    def spun(us: int) -> Callable[[], None]:
        def run() -> None:
            replay()
            end = time.perf_counter() + us * 1e-6
            while time.perf_counter() < end:
                pass
        return run

    def stats(xs: list[float]) -> list[float]:
        return [round(statistics.median(xs), 4), round(min(xs), 4)]

    out: dict[str, object] = {"repeat": args.repeat, "torch": torch.__version__}
    for order in (("run", "alone"), ("alone", "run")):
        times: dict[str, list[float]] = {"run": [], "alone": []}
        for i in range(args.repeat):
            reload(i)
            eager()
            for key in order:
                times[key].append(timed(plan.run if key == "run" else replay))
        out[f"{order[0]}_first"] = {k: stats(v) for k, v in times.items()}
    out["spin_us"] = {us: stats([timed(spun(us)) for _ in range(args.repeat)])
                      for us in (0, 50, 100, 150, 200, 250, 280)}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
