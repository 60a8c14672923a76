"""What one host sweep of a run costs cold (right after a reload) and warm, and the forms of it.

Thread CPU clock, microseconds, median and minimum. ``cold_warm``: each sweep of the eager
run on the reference model (``restore``: derived storage addresses, ``hops``: owner hops,
``source_ids`` and ``source_ptrs``: the source identity and address sweeps, ``holders``: the
holder identity sweep) timed right after a reload, then again at once (warm). ``forms``: warm,
over 496 small tensors: a ``data_ptr`` sweep as ``map`` over the method, ``methodcaller`` and
a list comprehension; the fresh-tensor layout check as four property sweeps (dtype, meta,
numel, ndim), as one ``Tensor.is_same_size`` sweep, and as one ``Tensor.type()`` sweep.

    python3 benchmarks/bench_sweep_costs.py --repeat 9
"""

from __future__ import annotations

import argparse
import gc
import json
import operator
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from derivgraph.planner import compile_plan
from derivgraph.tools.bench import _workload

_is = operator.is_
_data_ptr = torch.Tensor.data_ptr


def _stats(values: list[int]) -> list[float]:
    return [round(statistics.median(values) / 1e3, 1), round(min(values) / 1e3, 1)]


def cold_warm(repeat: int) -> dict[str, Any]:
    model, specs, reload, _post_load, _ = _workload("cpu", "reference", 61, None)
    plan = compile_plan(model, specs)
    plan.run()
    holders = plan.holders
    holders.sources_intact()
    plan.tensors.restore_storage()
    hops, table = holders.hops, holders.table
    s_dicts, s_keys, s_tensors, s_ptrs = holders._source_checks
    storages, ptrs = plan.tensors._startup
    sweeps: dict[str, Callable[[], Any]] = {
        "restore": lambda: list(map(_data_ptr, storages)) == ptrs,
        "hops": lambda: all(map(_is, map(dict.get, hops.dicts, hops.keys), hops.expected)),
        "source_ids": lambda: all(map(_is, map(dict.get, s_dicts, s_keys), s_tensors)),
        "source_ptrs": lambda: list(map(_data_ptr, s_tensors)) == s_ptrs,
        "holders": lambda: list(map(_is, map(dict.get, table.dicts, table.keys),
                                    table.storages)),
    }
    times: dict[str, tuple[list[int], list[int]]] = {k: ([], []) for k in sweeps}
    clock = time.thread_time_ns
    gc.collect()
    gc.freeze()
    with torch.no_grad():
        for i in range(repeat):
            for name, sweep in sweeps.items():
                reload(i)
                plan.run()  # the holders the reload rebuilt put back
                reload(i + 1)
                t0 = clock()
                sweep()
                t1 = clock()
                sweep()
                times[name][0].append(t1 - t0)
                times[name][1].append(clock() - t1)
    gc.unfreeze()
    return {"objects": {"restore": len(storages), "hops": len(hops.dicts),
                        "source_ids": len(s_tensors), "source_ptrs": len(s_tensors),
                        "holders": len(table)},
            "cold_us": {k: _stats(v[0]) for k, v in times.items()},
            "warm_us": {k: _stats(v[1]) for k, v in times.items()}}


def forms(repeat: int) -> dict[str, Any]:
    ours = [torch.randn(64) for _ in range(496)]
    theirs = [torch.randn(64) for _ in range(496)]
    dtype, meta = operator.attrgetter("dtype"), operator.attrgetter("is_meta")
    dtypes = [t.dtype for t in ours]
    numels, dims = [t.numel() for t in ours], [t.dim() for t in ours]
    types = [t.type() for t in ours]
    ptrs = list(map(_data_ptr, ours))
    call = operator.methodcaller("data_ptr")
    candidates: dict[str, Callable[[], Any]] = {
        "data_ptr_map": lambda: list(map(_data_ptr, ours)) == ptrs,
        "data_ptr_methodcaller": lambda: list(map(call, ours)) == ptrs,
        "data_ptr_listcomp": lambda: [t.data_ptr() for t in ours] == ptrs,
        "check_four_sweeps": lambda: list(map(dtype, theirs)) == dtypes
        and not any(map(meta, theirs)) and list(map(torch.Tensor.numel, theirs)) == numels
        and list(map(torch.Tensor.dim, theirs)) == dims,
        "check_one_property_sweep": lambda: list(map(dtype, theirs)) == dtypes,
        "check_is_same_size": lambda: all(map(torch.Tensor.is_same_size, theirs, ours)),
        "check_type_string": lambda: list(map(torch.Tensor.type, theirs)) == types,
    }
    times: dict[str, list[int]] = {k: [] for k in candidates}
    clock = time.thread_time_ns
    for _ in range(repeat * 20):
        for name, fn in candidates.items():
            t0 = clock()
            fn()
            times[name].append(clock() - t0)
    return {"tensors": len(ours), "warm_us": {k: _stats(v) for k, v in times.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--json", default=None, help="also write the result here")
    args = parser.parse_args()
    result = {"clock": "thread_time_ns", "torch": torch.__version__, "repeat": args.repeat,
              "cold_warm": cold_warm(args.repeat), "forms": forms(args.repeat)}
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result))  # noqa: T201 - a benchmark script reports on stdout


if __name__ == "__main__":
    main()
