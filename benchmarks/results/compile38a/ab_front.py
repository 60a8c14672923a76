"""In-process A/B of the compile's front half (match_specs, check_bindings, build_graph and
its phases, _evaluate_all) between a base tree and this one, on one stamped scaling model.

The base tree's package is imported under another name (``derivgraph_base``: a copy with its
imports renamed, made by ``make_base_pkg.sh``), so both run in one process on the same model,
alternating (the order swapped every round); process seconds per phase, medians and pairs.

    bash benchmarks/results/compile38a/make_base_pkg.sh /tmp/base_compile38a /tmp/abbase
    PYTHONPATH=/tmp/abbase:. python3 benchmarks/results/compile38a/ab_front.py --rounds 7
"""

import argparse
import gc
import importlib
import json
import pathlib
import statistics
import sys
import time
from typing import Any

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))  # benchmarks/
from bench_compile_phases import _instrument as instrument  # noqa: E402

import derivgraph.compiler.bind as m_bind
import derivgraph.compiler.build as m_build
import derivgraph.planner as m_planner
from derivgraph.compiler.stamp import Stamper as MStamper
from derivgraph.compiler.stamp_params import ParamStamper as MParams
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec


def _base(name: str) -> Any:
    """A module of the base tree's copy (``derivgraph_base``, made by ``make_base_pkg.sh``)."""
    return importlib.import_module(f"derivgraph_base.{name}")


b_bind, b_build, b_planner = _base("compiler.bind"), _base("compiler.build"), _base("planner")
BStamper = _base("compiler.stamp").Stamper
BParams = _base("compiler.stamp_params").ParamStamper
b_scaling_spec = _base("tools.bench_scaling").scaling_spec

parser = argparse.ArgumentParser()
parser.add_argument("--size", type=int, default=100000)
parser.add_argument("--rounds", type=int, default=7)
args = parser.parse_args()


def phases(build: Any, stamper: Any, params: Any) -> list[tuple[Any, str, str]]:
    return [(params, "resolve", "  resolve_params"), (stamper, "resolve_bound", "  resolve/stamp"),
            (build, "infer_shapes", "  infer_shapes"), (build, "_check_cycles", "  check_cycles"),
            (build, "index_issues", "  index_issues")]


trees = {}
for tag, bind, build, planner, stamper, params, spec in (
        ("base", b_bind, b_build, b_planner, BStamper, BParams, b_scaling_spec()),
        ("mine", m_bind, m_build, m_planner, MStamper, MParams, scaling_spec())):
    times: dict[str, float] = {}
    instrument(times, phases(build, stamper, params))  # bench_compile_phases' wrapper
    trees[tag] = (bind, build, planner, spec, times)

model = scaling_model(args.size // 4)


def front(tag: str) -> dict[str, float]:
    bind, build, planner, spec, times = trees[tag]
    times.clear()
    out: dict[str, float] = {}
    gc.collect()
    gc.disable()
    try:
        start = t = time.process_time()
        bound = bind.match_specs(model, [spec])
        out["match_specs"] = time.process_time() - t
        t = time.process_time()
        assert not bind.check_bindings(bound)
        out["check_bindings"] = time.process_time() - t
        t = time.process_time()
        graph = build.build_graph(model, bound)
        out["build_graph"] = time.process_time() - t
        assert not graph.issues
        out.update(times)
        t = time.process_time()
        sources, graph.read_sources = graph.read_sources, {}
        planner._evaluate_all(graph, sources)
        out["evaluate"] = time.process_time() - t
        out["front total"] = time.process_time() - start
    finally:
        gc.enable()
    return out


for tag in ("base", "mine"):  # warm-up: imports, caches
    front(tag)
runs: dict[str, list[dict[str, float]]] = {"base": [], "mine": []}
for r in range(args.rounds):
    for tag in (("base", "mine") if r % 2 == 0 else ("mine", "base")):
        runs[tag].append(front(tag))
keys = list(runs["base"][0])
result = {}
print(f"{'phase (process s)':20} {'base':>8} {'mine':>8}  mine faster in")  # noqa: T201
for k in keys:
    b = [r.get(k, 0.0) for r in runs["base"]]
    m = [r.get(k, 0.0) for r in runs["mine"]]
    wins = sum(y < x for x, y in zip(b, m))
    result[k] = {"base": round(statistics.median(b), 4), "mine": round(statistics.median(m), 4),
                 "pairs": [(round(x, 4), round(y, 4)) for x, y in zip(b, m)]}
    print(f"{k:20} {result[k]['base']:8.3f} {result[k]['mine']:8.3f}  {wins}/{len(b)}")  # noqa: T201
print(json.dumps(result))  # noqa: T201
