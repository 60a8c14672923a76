"""In-process A/B of ``build_graph`` on the scaling workload with stamping off (the plain path;
rows44/build_ab.py with DERIVGRAPH_STAMP=0 set before the trees are imported): the base
tree's package
against this tree's, alternating, in one process.

Each tree is imported whole under the name ``derivgraph`` and its modules set aside, so both
sets of modules live side by side (each one's functions see its own globals). Per round and
tree: a fresh model, ``match_specs`` + ``check_bindings`` (untimed), then ``build_graph``
timed (process time), with the time spent in ``ParamStamper.resolve`` and
``Stamper.resolve_bound`` (the per-row replay) added up by wrappers. The cyclic collector is
off while it runs, as ``compile_plan`` has it.

    python build_ab_plain.py BASE_TREE THIS_TREE [--size 100000] [--rounds 5] > build_ab_plain.txt
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from trees import load  # noqa: E402  (benchmarks/results/trees.py)


def once(tree: dict[str, Any], size: int) -> dict[str, float]:
    scaling, bind = tree["scaling"], tree["bind"]
    model = scaling.scaling_model(max(1, size // 4))
    bound = bind.match_specs(model, [scaling.scaling_spec()])
    bind.check_bindings(bound)
    gc.collect()
    tree["times"].clear()
    gc.disable()  # as compile_plan does
    try:
        start = time.process_time()
        graph = tree["build"].build_graph(model, bound)
        total = time.process_time() - start
    finally:
        gc.enable()
    assert not graph.issues and graph.stamped == 0  # stamping off: the plain path
    return {"build_graph": total, **tree["times"]}


def main() -> None:
    os.environ["DERIVGRAPH_STAMP"] = "0"  # read when each tree's stamp module is imported
    parser = argparse.ArgumentParser()
    parser.add_argument("base")
    parser.add_argument("mine")
    parser.add_argument("--size", type=int, default=100000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    trees = {"base": load(args.base), "mine": load(args.mine)}
    for tree in trees.values():
        once(tree, 4000)  # warm-up
    got: dict[str, list[dict[str, float]]] = {"base": [], "mine": []}
    for i in range(args.rounds):
        for tag in (("base", "mine") if i % 2 == 0 else ("mine", "base")):
            got[tag].append(once(trees[tag], args.size))
            print(tag, i, {k: round(v, 3) for k, v in got[tag][-1].items()}, flush=True)
    print(f"\nmedians over {args.rounds} rounds (process s), size {args.size}")
    for key in got["base"][0]:
        b = statistics.median(r[key] for r in got["base"])
        m = statistics.median(r[key] for r in got["mine"])
        wins = sum(rm[key] < rb[key] for rb, rm in zip(got["base"], got["mine"]))
        print(f"{key:16s} base {b:.3f}  mine {m:.3f}  delta {m - b:+.3f}  "
              f"mine faster in {wins} of {args.rounds}")


if __name__ == "__main__":
    main()
