"""Compile time of the scaling workload on two trees, alternating processes, CPU and wall clock.

Each process imports one tree's ``derivgraph``, builds the scaling workload (the model code of
this tree's ``derivgraph/tools/bench_scaling.py``, so both trees compile the same models),
compiles once untimed (imports, caches), then ``--repeat`` times on fresh models, recording the
process (CPU) time and the wall time of each ``compile_plan`` and of constructing each model.
Processes alternate between the trees for ``--rounds`` rounds, so load drifts on a shared
machine hit both alike; CPU time is the steadier figure there. Prints one JSON object.

    mkdir -p /tmp/base && git archive main derivgraph | tar -x -C /tmp/base
    python3 benchmarks/bench_compile_side_by_side.py --against /tmp/base --sizes 10000 100000
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "derivgraph" / "tools" / "bench_scaling.py"
RUN = """
import gc, importlib.util, json, sys, time
spec = importlib.util.spec_from_file_location('bench_scaling_models', sys.argv[1])
mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
from derivgraph.planner import compile_plan
size, repeat = int(sys.argv[2]), int(sys.argv[3])
layers = max(1, size // 4)
compile_plan(mod.scaling_model(layers), [mod.scaling_spec()])
rows = []
for _ in range(repeat):
    gc.collect()
    t, tc = time.perf_counter(), time.process_time()
    model = mod.scaling_model(layers)
    construct, construct_cpu = time.perf_counter() - t, time.process_time() - tc
    gc.collect()
    w, c = time.perf_counter(), time.process_time()
    plan = compile_plan(model, [mod.scaling_spec()])
    rows.append({"construct_s": construct, "construct_cpu_s": construct_cpu,
                 "compile_cpu_s": time.process_time() - c,
                 "compile_wall_s": time.perf_counter() - w, "derived": len(plan.entries)})
    del plan, model
print(json.dumps(rows))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--against", required=True, help="a directory holding derivgraph/")
    parser.add_argument("--sizes", type=int, nargs="+", default=[10000, 100000])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    trees = {"this": ROOT, "against": Path(args.against).resolve()}
    runs: dict[str, dict[int, list[dict]]] = {name: {s: [] for s in args.sizes} for name in trees}
    for _ in range(args.rounds):
        for size in args.sizes:
            for name, tree in trees.items():
                env = {**os.environ, "PYTHONPATH": str(tree)}
                out = subprocess.run([sys.executable, "-c", RUN, str(MODELS), str(size),
                                      str(args.repeat)], env=env, cwd="/", check=True,
                                     capture_output=True, text=True).stdout
                runs[name][size] += json.loads(out)
    result: dict = {"rounds": args.rounds, "repeat": args.repeat, "sizes": []}
    for size in args.sizes:
        row: dict = {"size": size}
        for name in trees:
            for key in ("construct_s", "construct_cpu_s", "compile_cpu_s", "compile_wall_s"):
                row[f"{name}_{key}"] = round(statistics.median(
                    r.get(key, float("nan")) for r in runs[name][size]), 4)
            row[f"{name}_compile_cpu_min_s"] = round(min(
                r["compile_cpu_s"] for r in runs[name][size]), 4)
            row[f"{name}_compile_over_construct"] = round(
                row[f"{name}_compile_wall_s"] / row[f"{name}_construct_s"], 2)
            row[f"{name}_compile_over_construct_cpu"] = round(
                row[f"{name}_compile_cpu_s"] / row[f"{name}_construct_cpu_s"], 2)
        row["cpu_this_over_against"] = round(row["this_compile_cpu_s"] /
                                             row["against_compile_cpu_s"], 3)
        row["wall_this_over_against"] = round(row["this_compile_wall_s"] /
                                              row["against_compile_wall_s"], 3)
        result["sizes"].append(row)
    result["runs"] = {name: {str(s): v for s, v in by.items()} for name, by in runs.items()}
    text = json.dumps(result, indent=1)
    print(text)  # noqa: T201 - a benchmark script
    if args.json:
        Path(args.json).write_text(text + "\n")


if __name__ == "__main__":
    main()
