"""Issue 20 item 2 on CPU: is post-load + refill <= 1.1x the post-load reachable at all?

The CPU deepseek workload of ``derivgraph bench`` (61 layers, 496 derived). Per round, on the
thread CPU clock, torch on one thread, in one process:

* ``post_load``: the engine's post-load step (what the ratio divides by);
* ``refill``: ``plan.refill()`` right after it (the captured plan, as ``post_load_refill.py``);
* ``memcpy``: one ``copy_`` of as many bytes as the refill must copy (the fresh tensors the
  post-load left at the refill table's holders), between two preallocated flat buffers,
  right after a post-load: the byte floor of any copy, with no per-tensor work at all;
* ``foreach``: ``torch._foreach_copy_`` of the same fresh tensors into their startup tensors
  (the per-tensor floor of aten's copy: one dispatch per tensor, no check, no rebind);
* ``touch``: one attribute (``dtype``) read from every fresh tensor after they are read from
  their holders (one C-level sweep): the least any check of the engine's 496 new tensor
  objects costs right after the post-load made them (each object a cache miss);
* ``reads``: reading the fresh tensors from their holders and storing the startup tensors back
  (``dict.get`` + a dict store per holder: the Python floor of the rebind, no check), which
  drops the last reference to each fresh tensor: their deallocation is in it;
* ``reads_kept``: the same with the fresh tensors kept alive past the clock (no deallocation):
  ``reads - reads_kept`` is what freeing the engine's fresh tensors costs (with a plan, the
  post-load frees nothing: the plan holds the startup tensors it replaced);
* ``copy``: the refill's own read, layout check and copy (``HolderTable.current``,
  ``RefillTable.take``, then ``Taken.copy``: flat runs of small CPU tensors by ``cat`` + a
  NumPy row assignment, the rest by foreach); ``copy_only``: ``Taken.copy`` alone (the read
  and the check off the clock).

``bytes_copied``: the refill table's target bytes; ``bytes_post_load``: the bytes of every
fresh tensor the post-load left at a holder (the same here). Medians with 95 % bootstrap
intervals of the per-round ratios (e2e24).

    PYTHONPATH=TREE python3 refill_floor.py --repeat 41 --json OUT.json
"""

from __future__ import annotations

import argparse
import gc
import json
import operator
import os
import random
import statistics
import time
from pathlib import Path

import torch

from derivgraph import compile_plan
from derivgraph.tools.bench import _workload

_dtype = operator.attrgetter("dtype")


def _boot(values: list[float], seed: int = 0, boot: int = 2000) -> list[float]:
    rng = random.Random(seed)
    meds = sorted(statistics.median(rng.choices(values, k=len(values))) for _ in range(boot))
    return [round(meds[int(0.025 * boot)], 4), round(meds[int(0.975 * boot)], 4)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=41)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    torch.set_num_threads(1)
    now = time.thread_time_ns
    model, specs, reload, post_load, _ = _workload("cpu", "deepseek", 61, None)
    plan = compile_plan(model, specs)
    plan.run()
    plan.capture()
    for i in range(3):
        reload(i)
        post_load()
        plan.refill()
    table = plan._refill_table_now()
    holders = plan.holders.table
    ours = table.storages
    idx = table.index
    dicts = [holders.dicts[i] for i in idx]
    keys = [holders.keys[i] for i in idx]
    nbytes = sum(t.numel() * t.element_size() for t in ours)
    src = torch.empty(nbytes, dtype=torch.uint8)
    dst = torch.empty(nbytes, dtype=torch.uint8)
    gc.collect()
    gc.freeze()
    arms = ("refill", "memcpy", "foreach", "touch", "reads", "reads_kept", "copy",
            "copy_only")
    rows: dict[str, list[float]] = {k: [] for k in ("post_load", *arms)}
    fresh_bytes: list[int] = []
    for i in range(args.repeat):
        for arm in arms:
            reload(i)
            t0 = now()
            post_load()
            t1 = now()
            if arm == "refill":
                plan.refill()
            elif arm == "memcpy":
                dst.copy_(src)
            elif arm == "foreach":
                theirs = list(map(dict.get, dicts, keys))
                t1 = now()
                torch._foreach_copy_(ours, theirs)
            elif arm == "touch":
                theirs = list(map(dict.get, dicts, keys))
                t1 = now()
                list(map(_dtype, theirs))
            elif arm in ("copy", "copy_only"):
                taken = table.take(holders.current())
                assert taken is not None and taken.mask is None, "every target rebuilt"
                if arm == "copy_only":
                    t1 = now()
                taken.copy()
            else:
                theirs = list(map(dict.get, dicts, keys))
                for d, k, t in zip(dicts, keys, ours):
                    d[k] = t
                if arm == "reads":
                    del theirs
            t2 = now()
            theirs = taken = None  # a kept read is freed here, off the clock
            rows["post_load"].append((t1 - t0) / 1e3)
            rows[arm].append((t2 - t1) / 1e3)
            if arm != "refill":
                if arm in ("memcpy", "foreach", "touch", "copy_only"):
                    theirs = list(map(dict.get, dicts, keys))
                    fresh_bytes.append(sum(t.numel() * t.element_size() for t in theirs
                                           if t is not None))
                plan.refill()  # back to the plan's state for the next arm (untimed)
    post = rows["post_load"]
    n = len(arms)
    per_round = [statistics.median(post[n * i:n * i + n]) for i in range(args.repeat)]
    out: dict = {"workload": "deepseek cpu (derivgraph bench, 61 layers)",
                 "derived": len(plan.entries), "targets": len(ours), "repeat": args.repeat,
                 "clock": "thread CPU", "bytes_copied": nbytes,
                 "bytes_post_load_fresh": statistics.median(fresh_bytes),
                 "post_load_us": round(statistics.median(post), 1)}
    for arm in arms:
        ratio = [(p + r) / p for p, r in zip(per_round, rows[arm])]
        out[f"{arm}_us"] = round(statistics.median(rows[arm]), 1)
        out[f"{arm}_ci95_us"] = _boot(rows[arm])
        out[f"post_load_plus_{arm}_over_post_load"] = round(statistics.median(ratio), 4)
        out[f"post_load_plus_{arm}_ci95"] = _boot(ratio)
    out["load_after"] = [round(x, 2) for x in os.getloadavg()]
    out["runs_us"] = rows
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps({k: v for k, v in out.items() if k != "runs_us"}))  # noqa: T201


if __name__ == "__main__":
    main()
