"""In-process A/B of the sources' startup addresses at 100k (supporting evidence): inside one
stamped compile, right after ``_record_startup`` (the layout book still set), the base rule
(``address_of`` of each source) and ``planner._addresses`` (one ``data_ptr`` sweep where the
book's records prove every source a plain tensor off the meta device) run alternately on the
compile's own source tensors, order reversed every other round; answers asserted equal first.

    PYTHONPATH=. python3 benchmarks/results/adopt62/source_addresses_ab.py --rounds 15

Ran on the change it measures (``planner._addresses``), which was dropped (slower: see
``source_addresses_ab.txt`` and NOTES.md); it does not run on the final tree.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import derivgraph.planner as planner
from derivgraph.addresses import address_of
from derivgraph.compiler.stamp import stamping
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=100000)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    results: dict[str, list[float]] = {"base": [], "mine": []}
    original = planner._record_startup

    def measured(plan: Any, owners: Any = None) -> Any:
        read, reads = original(plan, owners)
        tensors, book = list(read.values()), plan.tensors.layouts
        arms = {"base": lambda: list(map(address_of, tensors)),
                "mine": lambda: planner._addresses(tensors, book)}
        assert arms["base"]() == arms["mine"]() and book is not None
        for r in range(args.rounds):
            for name in (("base", "mine") if r % 2 == 0 else ("mine", "base")):
                start = time.process_time()
                arms[name]()
                results[name].append(time.process_time() - start)
        return read, reads

    planner._record_startup = measured
    with stamping(True):
        planner.compile_plan(scaling_model(args.size // 4), [scaling_spec()])
    base, mine = results["base"], results["mine"]
    print(f"sources: {len(base) and args.size // 2}; rounds {args.rounds}")
    print(f"base  address_of each   median {statistics.median(base):.4f} s")
    print(f"mine  _addresses        median {statistics.median(mine):.4f} s")
    print(f"mine faster in {sum(m < b for b, m in zip(base, mine))} of {len(base)}")
    print("per round (base, mine): " + " ".join(f"({b:.4f}, {m:.4f})" for b, m in zip(base, mine)))


if __name__ == "__main__":
    main()
