"""One 100k stamped compile and the work right after it, in this process (PYTHONPATH: the
tree): the compile's process time, then the time of the next allocations (``--after`` small
lists, a stand-in for whatever the caller does next), and the time the collector spent in
each generation during both (``gc.callbacks``). One JSON line; run alternately per tree by
``after_compile.sh``.

    PYTHONPATH=TREE python3 benchmarks/results/adopt62/after_compile.py --tag base
"""

from __future__ import annotations

import argparse
import gc
import json
import time

from derivgraph.compiler.stamp import stamping
from derivgraph.planner import compile_plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=100000)
    parser.add_argument("--after", type=int, default=300000)
    parser.add_argument("--tag", default="")
    args = parser.parse_args()
    spec = scaling_spec()
    with stamping(True):
        compile_plan(scaling_model(250), [spec])  # warm-up
    model = scaling_model(args.size // 4)
    gc.collect()
    spent: dict[int, float] = {}
    started: list[float] = [0.0]

    def timed(phase: str, info: dict) -> None:
        if phase == "start":
            started[0] = time.process_time()
        else:
            gen = info["generation"]
            spent[gen] = spent.get(gen, 0.0) + time.process_time() - started[0]

    gc.callbacks.append(timed)
    start = time.process_time()
    with stamping(True):
        plan = compile_plan(model, [spec])
    compiled = time.process_time()
    junk = [[i] for i in range(args.after)]
    done = time.process_time()
    gc.callbacks.remove(timed)
    print(json.dumps({"tag": args.tag, "compile": round(compiled - start, 4),
                      "after": round(done - compiled, 4), "both": round(done - start, 4),
                      **{f"gen{g}": round(s, 4) for g, s in sorted(spent.items())},
                      "entries": len(plan.entries), "kept": len(junk)}))


if __name__ == "__main__":
    main()
