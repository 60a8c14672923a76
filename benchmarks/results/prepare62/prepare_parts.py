"""Process time of the parts of ``Plan.prepare`` in a stamped scaling compile (one process,
after a small warm-up compile; medians of ``--repeat`` compiles on fresh models). Each part is
one function wrapped for the run (nested parts also count in their parent; a part the tree
lacks is skipped). Run with the tree under test first on the path:

    PYTHONPATH=TREE python3 benchmarks/results/prepare62/prepare_parts.py --size 100000 --repeat 3
"""

from __future__ import annotations

import argparse
import functools
import gc
import importlib
import json
import statistics
import time
from typing import Any

from derivgraph.compiler.stamp import stamping
from derivgraph.planner import compile_plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

PARTS = [
    ("derivgraph.runtime.plan:Plan.prepare", "prepare (all)"),
    ("derivgraph.runtime.holders:Holders.sources_intact", "  sources_intact"),
    ("derivgraph.runtime.holders:Holders.owners_current", "    owners_current"),
    ("derivgraph.runtime.holders:Holders._sources_held", "    _sources_held"),
    ("derivgraph.runtime.holders:Holders._at_addresses", "    _at_addresses"),
    ("derivgraph.runtime.storage:BoundTensors.startup_addresses", "  startup_addresses (make)"),
    ("derivgraph.runtime.accessors:HolderTable.at_startup_addresses",
     "  table.at_startup_addresses"),
    ("derivgraph.runtime.accessors:HolderTable.changed", "  table.changed"),
    ("derivgraph.runtime.plan:Plan._refill_table_now", "  refill table"),
    ("derivgraph.runtime.engine:Layouts.guard", "    layout guard"),
    ("derivgraph.runtime.engine:flat_runs", "    flat_runs"),
    ("derivgraph.runtime.flat_copy:FlatCopy.__init__", "      FlatCopy.__init__"),
    ("derivgraph.compiler.flat:span_of_run", "      span_of_run"),
    ("derivgraph.runtime.engine:_by_key", "    _by_key"),
    ("derivgraph.runtime.engine:Layouts.__init__", "    Layouts.__init__"),
    ("derivgraph.runtime.engine:_dims", "      _dims"),
    ("derivgraph.runtime.engine:strided_positions", "    strided_positions"),
    ("derivgraph.column_layout:ColumnLayouts.of", "    layouts.of"),
    ("derivgraph.runtime.plan:Plan._rest_for", "  _rest_for"),
    ("derivgraph.runtime.plan:Plan._entry", "  _entry"),
    ("derivgraph.runtime.watch:watch_items", "  (watch_items, any caller)"),
    ("derivgraph.runtime.watch:group_by_dict", "  (group_by_dict, any caller)"),
    ("derivgraph.addresses:addresses_equal", "  (addresses_equal, any caller)"),
    ("derivgraph.addresses:Addresses.__init__", "  (Addresses words, any caller)"),
]


def _wrap(times: dict[str, float]) -> None:
    for name, label in PARTS:
        module_name, _, qual = name.partition(":")
        module = importlib.import_module(module_name)
        owner: Any = module
        *path, attr = qual.split(".")
        for p in path:
            owner = getattr(owner, p)
        fn = getattr(owner, attr, None)
        if fn is None:
            continue

        @functools.wraps(fn)
        def timed(*args: Any, __fn: Any = fn, __label: str = label, **kwargs: Any) -> Any:
            start = time.process_time()
            try:
                return __fn(*args, **kwargs)
            finally:
                times[__label] = times.get(__label, 0.0) + time.process_time() - start

        setattr(owner, attr, timed)
        # module-level functions imported by name elsewhere in the runtime
        if not path:
            for other in ("derivgraph.runtime.engine", "derivgraph.runtime.watch",
                          "derivgraph.runtime.accessors", "derivgraph.runtime.holders",
                          "derivgraph.runtime.storage", "derivgraph.addresses",
                          "derivgraph.runtime.flat_copy", "derivgraph.compiler.flat"):
                mod = importlib.import_module(other)
                if getattr(mod, attr, None) is fn:
                    setattr(mod, attr, timed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=100000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    spec = scaling_spec()
    with stamping(True):
        compile_plan(scaling_model(250), [spec])
    times: dict[str, float] = {}
    _wrap(times)
    runs: list[dict[str, float]] = []
    for _ in range(args.repeat):
        model = scaling_model(args.size // 4)
        gc.collect()
        times.clear()
        with stamping(True):
            plan = compile_plan(model, [spec])
        runs.append(dict(times))
        del plan, model
    labels = [label for _n, label in PARTS if any(label in r for r in runs)]
    out = {label: statistics.median(r.get(label, 0.0) for r in runs) for label in labels}
    for label in labels:
        print(f"{label:40s} {out[label]:.4f}")
    if args.json:
        with open(args.json, "a") as f:
            f.write(json.dumps({"parts": out, "runs": runs}) + "\n")


if __name__ == "__main__":
    main()
