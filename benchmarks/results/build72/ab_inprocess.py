"""In-process interleaved A/B of build72's cuts: A runs the base's code (``d4e0747f``, read
from a base tree) of the functions build72 changed, swapped in by ``__code__``; B this tree's.
Each round builds (``match_specs`` + ``check_bindings`` + ``build_graph``, process time, gc
off as in ``compile_plan``) on a fresh scaling model, A then B or B then A alternately; with
``--compile`` the whole ``compile_plan`` is timed instead.

    PYTHONPATH=. python benchmarks/results/build72/ab_inprocess.py /tmp/base72 25000 15 [--compile]
"""

from __future__ import annotations

import gc
import statistics
import sys
import time
import types
from typing import Any

from derivgraph import planner
from derivgraph.compiler import build, graph, layers, stamp, stamp_params
from derivgraph.compiler.bind import check_bindings, match_specs
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

#: (base file, qualified name, the live function whose code is swapped)
SWAPS = [
    ("derivgraph/compiler/layers.py", "closed_layers", layers.closed_layers),
    ("derivgraph/compiler/stamp.py", "Stamper._replay_run", stamp.Stamper._replay_run),
    ("derivgraph/compiler/stamp_params.py", "ParamStamper.proven_after",
     stamp_params.ParamStamper.proven_after),
    ("derivgraph/compiler/graph.py", "DerivedGraph.derived_each",
     graph.DerivedGraph.derived_each),
]


def _code(module: types.CodeType, qualname: str) -> types.CodeType:
    """The code object of ``qualname`` (a function or a class's method) in ``module``."""
    code = module
    for part in qualname.split("."):
        code = next(c for c in code.co_consts
                    if isinstance(c, types.CodeType) and c.co_name == part)
    return code


def main() -> None:
    base, layers_n, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    whole = "--compile" in sys.argv
    spec = scaling_spec()
    codes: dict[str, list[tuple[Any, types.CodeType]]] = {"A": [], "B": []}
    for path, qualname, fn in SWAPS:
        with open(f"{base}/{path}") as f:
            module = compile(f.read(), path, "exec")
        codes["A"].append((fn, _code(module, qualname)))
        codes["B"].append((fn, fn.__code__))

    def run(tag: str) -> float:
        for fn, code in codes[tag]:
            fn.__code__ = code
        model = scaling_model(layers_n)
        gc.collect()
        gc.disable()
        start = time.process_time()
        if whole:
            planner.compile_plan(model, [spec])
        else:
            bound = match_specs(model, [spec])
            check_bindings(bound)
            build.build_graph(model, bound)
        took = time.process_time() - start
        gc.enable()
        return took

    run("A")
    run("B")  # warm-up
    times: dict[str, list[float]] = {"A": [], "B": []}
    for r in range(rounds):
        for tag in ("A", "B") if r % 2 == 0 else ("B", "A"):
            times[tag].append(run(tag))
    wins = sum(b < a for a, b in zip(times["A"], times["B"]))
    what = "compile_plan" if whole else "match+check+build_graph"
    for tag in ("A", "B"):
        print(f"{tag} {what}: median {statistics.median(times[tag]) * 1e3:.1f} ms "
              f"min {min(times[tag]) * 1e3:.1f} ms")
    print(f"B faster in {wins} of {rounds} pairs; median of B-A "
          f"{statistics.median(b - a for a, b in zip(times['A'], times['B'])) * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
