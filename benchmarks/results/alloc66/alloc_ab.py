"""In-process A/B of the unfilled entry columns (100k, stamped scaling), inside whole compiles.

Arms, alternating (the order reversed every other round), one compile each: ``base`` has
``planner.pass_writes`` answer False (every column made filled, nothing owed: the base
path), ``mine`` the tree as it is. Process time of: the columns' allocation
(``EntryColumn.allocate``), the compile's fills (``planner.foreach_copy``: the generic fills
and any owed ones), the whole ``planner._lower`` (binds, lowering, ``_pay``, the first pass
run: the first write of the unfilled storages, and the bit check), their sum ``alloc``, and
the whole ``compile_plan``; inside ``_lower``, ``planner._pay`` (mine only: the written set
and the proof) and ``planner._mismatches`` (the bit check, taking ``_pay``'s set in mine).
Each arm's plan is checked: no row of a column differs from its eager value (the bit check
raised nothing, no demotion warning).

    cd TREE && PYTHONPATH=. python3 benchmarks/results/alloc66/alloc_ab.py [--rounds N] [--size N]
"""

from __future__ import annotations

import argparse
import gc
import logging
import os
import statistics
import time
from typing import Any

from derivgraph import planner
from derivgraph.compiler.stamp import stamping
from derivgraph.runtime.entry_columns import EntryColumn
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

PARTS = ("allocate", "fills", "lower")
spent: dict[str, float] = {}


def timed(name: str, fn: Any) -> Any:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            spent[name] = spent.get(name, 0.0) + time.process_time() - start
    return wrapper


class Warned(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.count += 1


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--size", type=int, default=100000)
    args = parser.parse_args()
    real_writes = planner.pass_writes
    EntryColumn.allocate = timed("allocate", EntryColumn.allocate)  # type: ignore[method-assign]
    planner.foreach_copy = timed("fills", planner.foreach_copy)
    planner._lower = timed("lower", planner._lower)
    planner._pay = timed("pay", planner._pay)
    planner._mismatches = timed("mismatches", planner._mismatches)
    warned = Warned()
    logging.getLogger("derivgraph.planner").addHandler(warned)
    arms = {"base": lambda node, deps: False, "mine": real_writes}
    shown = (*PARTS, "pay", "mismatches", "alloc", "compile")
    out: dict[str, dict[str, list[float]]] = {a: {p: [] for p in shown} for a in arms}
    spec = scaling_spec()
    with stamping(True):
        planner.compile_plan(scaling_model(args.size // 4), [spec])  # warm-up
        for r in range(args.rounds):
            for arm in (("base", "mine") if r % 2 == 0 else ("mine", "base")):
                planner.pass_writes = arms[arm]
                model = scaling_model(args.size // 4)
                gc.collect()
                spent.clear()
                start = time.process_time()
                plan = planner.compile_plan(model, [spec])
                total = time.process_time() - start
                assert warned.count == 0, "the grouped pass was demoted"
                for p in (*PARTS, "pay", "mismatches"):
                    out[arm][p].append(spent.get(p, 0.0))
                out[arm]["alloc"].append(sum(spent.get(p, 0.0) for p in PARTS))
                out[arm]["compile"].append(total)
                del plan, model
    print(f"size {args.size}, {args.rounds} rounds, load {os.getloadavg()}")
    for part in shown:
        a, b = out["base"][part], out["mine"][part]
        wins = sum(y < x for x, y in zip(a, b))
        print(f"{part:11s} base {statistics.median(a):.4f}  mine {statistics.median(b):.4f}  "
              f"mine lower {wins} of {len(a)}")


if __name__ == "__main__":
    main()
