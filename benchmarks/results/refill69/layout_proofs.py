"""What the all-rebuilt read's layout proof costs on the deepseek workload (61 layers, 496
fresh tensors), and what cheaper proofs would cost, CPU, thread CPU time, medians in us.

1. In situ (``plan.refill()``, arms interleaved, the order alternating): ``guard`` (the
   library's) against ``no_guard`` (the guard's check answering True without reading a tensor:
   a measurement of its marginal cost only, not exact) and ``held`` (the engine's fresh tensors
   kept alive past the refill by the caller: what freeing them inside the refill costs).
2. Right after a reload (cold) and again at once (warm), over the same 496 fresh tensors:
   the guard's ``check``; ``words``, the candidate proof by raw words (each object's address by
   ``id``, one gather of its type and ``TensorImpl`` words, one gather of the ``TensorImpl``'s
   size and dtype/key words); ``types`` (one identity sweep of the Python types, a part of
   any proof); ``swept`` (the reference sweeps, ``Layouts.swept``).
3. Warm, ``timeit`` (best of 5 x 2000): the guard, the words, the types.

    PYTHONPATH=. python3 benchmarks/results/refill69/layout_proofs.py [ROUNDS] [DEVICE]

``DEVICE``: ``cpu`` (default) or ``cuda`` (the workload at its CUDA size; every figure is host
time: no call waits for the device).
"""

from __future__ import annotations

import ctypes
import gc
import itertools
import json
import operator
import os
import statistics
import sys
import time
import timeit
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from derivgraph.planner import compile_plan
from derivgraph.tools.bench import _workload

_WORD = 8
_MEMORY = np.frombuffer((ctypes.c_int64 * ((1 << 48) // _WORD - 1)).from_address(_WORD),
                        dtype=np.int64)  # the address space from byte 8, as int64 words


def _impl_word() -> int:
    """The word of a tensor's Python object that holds its ``TensorImpl`` address."""
    found = [{i for i, w in enumerate((ctypes.c_int64 * 8).from_address(id(t)))
              if w == t._cdata} for t in (torch.zeros(3), torch.ones(2, 2), torch.empty(0))]
    (word,) = set.intersection(*found)
    return word


class _Always:
    def check(self, *tensors: Any) -> bool:
        return True


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 201
    device = sys.argv[2] if len(sys.argv) > 2 else "cpu"
    model, specs, reload, post_load, _ = _workload(device, "deepseek", 61, None)
    plan = compile_plan(model, specs)
    for i in range(3):
        reload(i)
        post_load()
        plan.refill()
    table = plan._refill_table
    layouts = table._layouts
    guard = layouts._guard
    impl = _impl_word()
    heads = np.array([1, impl], dtype=np.intp)  # ob_type, the TensorImpl address
    fields = np.array([7, 8, 20, 21], dtype=np.intp)  # ndim, size 0, dtype/device, keys

    def words(theirs: list[Any]) -> bytes:
        ids = np.fromiter(map(id, theirs), dtype=np.int64, count=len(theirs))
        ids -= _WORD
        ids >>= 3
        head = _MEMORY.take(ids[:, None] + heads)
        impls = head[:, 1] - _WORD
        impls >>= 3
        return head[:, 0].tobytes() + _MEMORY.take(impls[:, None] + fields).tobytes()

    plain = itertools.repeat(torch.Tensor)

    def types(theirs: list[Any]) -> bool:
        return all(map(operator.is_, map(type, theirs), plain))

    clock = time.thread_time_ns
    times: dict[str, list[float]] = {}

    def timed(key: str, fn: Callable[[], Any]) -> Any:
        t0 = clock()
        out = fn()
        times.setdefault(key, []).append((clock() - t0) / 1e3)
        return out

    gc.collect()
    gc.freeze()
    arms = ("guard", "no_guard", "held")
    with torch.no_grad():
        for r in range(rounds):
            for arm in arms[r % 3:] + arms[:r % 3]:
                reload(r)
                post_load()
                layouts._guard = _Always() if arm == "no_guard" else guard
                keep = plan.holders.table.current() if arm == "held" else None
                timed(arm, plan.refill)
                del keep
            layouts._guard = guard
            for probe in ("guard", "words", "types", "swept"):
                reload(r)
                post_load()
                current = plan.holders.table.current()
                theirs = current if table._pick is None else table._pick(current)
                fn = {"guard": lambda t=theirs: guard.check(*t),
                      "words": lambda t=theirs: words(t),
                      "types": lambda t=theirs: types(t),
                      "swept": lambda t=theirs: layouts.swept(t)}[probe]
                timed(f"{probe}_cold", fn)
                timed(f"{probe}_warm", fn)
                del current, theirs
        reload(0)
        post_load()
        current = plan.holders.table.current()
        theirs = current if table._pick is None else table._pick(current)
        assert guard.check(*theirs) and types(theirs)
        warm = {name: round(min(timeit.repeat(fn, number=2000, repeat=5)) / 2000 * 1e6, 1)
                for name, fn in (("guard", lambda: guard.check(*theirs)),
                                 ("words", lambda: words(theirs)),
                                 ("types", lambda: types(theirs)))}
    paired = {arm: [a - b for a, b in zip(times["guard"], times[arm])]
              for arm in ("no_guard", "held")}
    print(json.dumps({
        "rounds": rounds, "device": device, "load": os.getloadavg()[0],
        "median_us": {k: round(statistics.median(v), 1) for k, v in times.items()},
        "guard_minus": {arm: round(statistics.median(d), 1) for arm, d in paired.items()},
        "guard_higher": {arm: f"{sum(x > 0 for x in d)} of {len(d)}"
                         for arm, d in paired.items()},
        "timeit_us": warm}))


if __name__ == "__main__":
    main()
