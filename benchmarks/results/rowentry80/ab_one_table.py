"""In-process A/B of ``BoundTensors._one_table`` on the 4 entry columns of a stamped compile
(what ``bind_tensors`` asks): the per-entry sweep (base: ``table.get`` of every ref, then each
entry's storage) against the column's answer (``column.ids == refs``, its storages copied).
Interleaved rounds; the plan compiled with ``hold_rows`` off so the by-id dict holds every
row's entry (as it does while the compile binds).
usage: PYTHONPATH=. python3 benchmarks/results/rowentry80/ab_one_table.py [LAYERS] [ROUNDS]
"""
from __future__ import annotations

import gc
import sys
import time
from itertools import repeat
from operator import attrgetter, is_

from derivgraph.planner import compile_plan
from derivgraph.runtime.plan import Plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

_STORAGE, _UNSET = attrgetter("storage"), object()


def base(tensors, refs):  # the per-entry sweep (the base tree's _one_table on the entries)
    table = tensors.entries
    if table.keys().isdisjoint(refs):
        return None
    values = list(map(table.get, refs, repeat(_UNSET)))
    if any(map(is_, values, repeat(_UNSET))):
        return None
    return list(map(_STORAGE, values))


def main() -> None:
    layers = int(sys.argv[1]) if len(sys.argv) > 1 else 25000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 7
    Plan.hold_rows = lambda self: False  # keep the rows' entries (the compile's state)
    plan = compile_plan(scaling_model(layers), [scaling_spec()])
    tensors = plan.tensors
    tensors.column_rows = plan.entries.rows  # the compile's window (planner._compile)
    refs = [list(c.ids) for _, c in plan.entries.rows]  # copies, as bound_values makes
    for r in refs:
        assert base(tensors, r) == tensors._one_table(r, None) or all(
            map(is_, base(tensors, r), tensors._one_table(r, None)))
    gc.disable()
    a, b = [], []
    for _ in range(rounds):
        t = time.perf_counter()
        for r in refs:
            base(tensors, r)
        a.append(time.perf_counter() - t)
        t = time.perf_counter()
        for r in refs:
            tensors._one_table(r, None)
        b.append(time.perf_counter() - t)
    a.sort(), b.sort()
    print(f"{layers} layers, {len(refs)} columns of {len(refs[0])} rows, {rounds} rounds")
    print(f"per-entry sweep: median {a[rounds // 2] * 1e3:.2f} ms  min {a[0] * 1e3:.2f}")
    print(f"column answer:   median {b[rounds // 2] * 1e3:.2f} ms  min {b[0] * 1e3:.2f}")


if __name__ == "__main__":
    main()
