"""In-process A/B of ``build_graph`` with no wrapper inside it (``front46/build_ab.py`` times
``Stamper.resolve_bound`` per call, and its wrapper's cost per call counts against a tree that
calls it once per layer): the base tree's package against this tree's, alternating, in one
process, process time, the cyclic collector off as ``compile_plan`` has it.

    python plain_build_ab.py BASE_TREE THIS_TREE [--size 100000] [--rounds 15] > out.txt
"""

from __future__ import annotations

import argparse
import gc
import importlib
import statistics
import sys
import time
from typing import Any


def load(tree: str) -> dict[str, Any]:
    """The tree's bind, build and scaling modules, its modules then removed from sys.modules."""
    for name in [m for m in sys.modules if m == "derivgraph" or m.startswith("derivgraph.")]:
        del sys.modules[name]
    sys.path.insert(0, tree)
    try:
        got = {key: importlib.import_module(f"derivgraph.{name}") for key, name in (
            ("bind", "compiler.bind"), ("build", "compiler.build"),
            ("scaling", "tools.bench_scaling"))}
    finally:
        sys.path.remove(tree)
    for name in [m for m in sys.modules if m == "derivgraph" or m.startswith("derivgraph.")]:
        del sys.modules[name]
    return got


def once(tree: dict[str, Any], size: int) -> float:
    scaling, bind = tree["scaling"], tree["bind"]
    model = scaling.scaling_model(max(1, size // 4))
    bound = bind.match_specs(model, [scaling.scaling_spec()])
    bind.check_bindings(bound)
    gc.collect()
    gc.disable()
    try:
        start = time.process_time()
        graph = tree["build"].build_graph(model, bound)
        total = time.process_time() - start
    finally:
        gc.enable()
    assert not graph.issues and graph.stamped == max(1, size // 4) - 1
    return total


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("base")
    parser.add_argument("mine")
    parser.add_argument("--size", type=int, default=100000)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    trees = {"base": load(args.base), "mine": load(args.mine)}
    for tree in trees.values():
        once(tree, 4000)  # warm-up
    got: dict[str, list[float]] = {"base": [], "mine": []}
    for i in range(args.rounds):
        for tag in (("base", "mine") if i % 2 == 0 else ("mine", "base")):
            got[tag].append(once(trees[tag], args.size))
            print(tag, i, round(got[tag][-1], 4), flush=True)
    b, m = statistics.median(got["base"]), statistics.median(got["mine"])
    wins = sum(rm < rb for rb, rm in zip(got["base"], got["mine"]))
    print(f"\nbuild_graph (no wrappers), medians over {args.rounds} rounds, size {args.size}: "
          f"base {b:.3f}  mine {m:.3f}  delta {m - b:+.3f}  mine faster in {wins} of "
          f"{args.rounds}")


if __name__ == "__main__":
    main()
