"""In-process A/B of ``PathReader.get`` over every source path of the stamped scaling graph
(what ``planner._record_startup`` reads), base tree vs this tree alternating, collector off.

    python owners_ab.py BASE_TREE THIS_TREE [--size 100000] [--rounds 11] > owners_ab.txt
"""

from __future__ import annotations

import argparse
import gc
import importlib
import statistics
import sys
import time
from typing import Any


def load(tree: str) -> Any:
    for name in [m for m in sys.modules if m == "derivgraph" or m.startswith("derivgraph.")]:
        del sys.modules[name]
    sys.path.insert(0, tree)
    try:
        owners = importlib.import_module("derivgraph.compiler.owners")
    finally:
        sys.path.remove(tree)
    for name in [m for m in sys.modules if m == "derivgraph" or m.startswith("derivgraph.")]:
        del sys.modules[name]
    return owners


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("base")
    parser.add_argument("mine")
    parser.add_argument("--size", type=int, default=100000)
    parser.add_argument("--rounds", type=int, default=11)
    args = parser.parse_args()
    trees = {"base": load(args.base), "mine": load(args.mine)}
    sys.path.insert(0, args.mine)
    from derivgraph.compiler.bind import check_bindings, match_specs
    from derivgraph.compiler.build import build_graph
    from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

    model = scaling_model(max(1, args.size // 4))
    bound = match_specs(model, [scaling_spec()])
    check_bindings(bound)
    paths = build_graph(model, bound).sources()
    got: dict[str, list[float]] = {"base": [], "mine": []}
    results = {}
    for i in range(args.rounds):
        for tag in (("base", "mine") if i % 2 == 0 else ("mine", "base")):
            gc.collect()
            gc.disable()
            start = time.process_time()
            read = list(map(trees[tag].PathReader(model).get, paths))
            got[tag].append(time.process_time() - start)
            gc.enable()
            results[tag] = read
            print(tag, i, round(got[tag][-1], 4), flush=True)
    assert all(a is b for a, b in zip(results["base"], results["mine"], strict=True))
    b, m = statistics.median(got["base"]), statistics.median(got["mine"])
    wins = sum(x < y for x, y in zip(got["mine"], got["base"]))
    print(f"\n{len(paths)} paths, medians over {args.rounds} rounds (process s): base {b:.4f} "
          f"mine {m:.4f} delta {m - b:+.4f}, mine faster in {wins} of {args.rounds}")


if __name__ == "__main__":
    main()
