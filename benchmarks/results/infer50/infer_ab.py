"""In-process A/B of ``infer_shapes`` alone on the stamped scaling workload: per tree (loaded
as front46's build_ab.py loads it: ``benchmarks/results/trees.py``), one graph built, its
``infer_shapes`` call's arguments kept; then that call repeated, the trees alternating, GC off
(process seconds).

    python infer_ab.py BASE_TREE THIS_TREE [--size 100000] [--rounds 15] > infer_ab.txt
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from typing import Any

sys.path.insert(0, __file__.rsplit("/", 2)[0])
from trees import load  # noqa: E402  (benchmarks/results/trees.py)


def graph_of(tree: dict[str, Any], size: int) -> tuple[Any, Any, Any]:
    """Build the tree's graph, keeping its infer_shapes function and arguments."""
    build, scaling, bind = tree["build"], tree["scaling"], tree["bind"]
    kept: list[Any] = []
    fn = build.infer_shapes

    def keep(graph: Any, twins: Any = None) -> None:
        kept.append((graph, twins))
        fn(graph, twins)

    build.infer_shapes = keep
    model = scaling.scaling_model(max(1, size // 4))
    bound = bind.match_specs(model, [scaling.scaling_spec()])
    bind.check_bindings(bound)
    build.build_graph(model, bound)
    build.infer_shapes = fn
    graph, twins = kept[0]
    assert not graph.issues
    return fn, graph, twins


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("base")
    parser.add_argument("mine")
    parser.add_argument("--size", type=int, default=100000)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    trees = {tag: graph_of(load(path), args.size) for tag, path in
             (("base", args.base), ("mine", args.mine))}
    got: dict[str, list[float]] = {"base": [], "mine": []}
    gc.collect()
    gc.disable()
    for i in range(args.rounds):
        for tag in (("base", "mine") if i % 2 == 0 else ("mine", "base")):
            fn, graph, twins = trees[tag]
            start = time.process_time()
            fn(graph, twins)
            got[tag].append(time.process_time() - start)
            assert not graph.issues
            print(tag, i, round(got[tag][-1], 4), flush=True)
    b, m = statistics.median(got["base"]), statistics.median(got["mine"])
    wins = sum(x < y for x, y in zip(got["mine"], got["base"]))
    print(f"\ninfer_shapes medians over {args.rounds} rounds (process s), size {args.size}: "
          f"base {b:.4f}  mine {m:.4f}  delta {m - b:+.4f}  mine faster in {wins} of "
          f"{args.rounds}")


if __name__ == "__main__":
    main()
