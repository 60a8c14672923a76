"""DESIGN 6o's dropped alternatives for ``watch_items``' grouping, timed beside the library's.

``derivgraph.runtime.watch.watch_items`` groups a table's accessors by the dict that holds them
(``group_by_dict``: one Python loop over the items, a dict from ``id`` to position). Three
alternatives were tried and dropped; this script times each against the loop on the same
tables and checks that each gives the loop's answer (the unique dicts in first-seen order,
each one's item indices, the items outside any dict). Tables: ``n`` items over ``n / 4``
dicts, each dict's items consecutive (the stamped scaling workload's layout: four derived
tensors per layer), with one item in 64 held outside any dict. Medians of ``--repeat`` runs,
process time, one process, the cyclic collector off while timing (as ``compile_plan`` has it).

    python3 benchmarks/results/s52/watch_items_micro.py --repeat 9 \
        > benchmarks/results/s52/watch_items_micro.txt
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from itertools import groupby
from typing import Any

import numpy as np

from derivgraph.runtime.watch import group_by_dict

OUTSIDE: dict[Any, Any] = {}


def library_loop(dicts: list[dict]) -> tuple[list, list, list]:
    """The library's grouping (``watch_items`` without the tag snapshot)."""
    return group_by_dict(dicts, OUTSIDE)


def numpy_unique(dicts: list[dict]) -> tuple[list, list, list]:
    """``np.unique`` over the ids (first-seen order from the first indices), members by a
    stable argsort of the inverse."""
    ids = np.fromiter(map(id, dicts), dtype=np.int64, count=len(dicts))
    out = ids == id(OUTSIDE)
    always = np.flatnonzero(out).tolist()
    inside = np.flatnonzero(~out)
    _, first, inverse = np.unique(ids[inside], return_index=True, return_inverse=True)
    rank = np.empty(len(first), dtype=np.intp)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first))
    group = rank[inverse]
    order = np.argsort(group, kind="stable")
    bounds = np.flatnonzero(np.diff(group[order])) + 1
    members = [part.tolist() for part in np.split(inside[order], bounds)] if len(inside) else []
    firsts = inside[np.sort(first)]
    unique = [dicts[i] for i in firsts.tolist()]
    return unique, members, always


def runs_of_one_dict(dicts: list[dict]) -> tuple[list, list, list]:
    """Runs of consecutive items in one dict (``groupby`` on identity), merged into the loop's
    groups only where a dict comes back after another."""
    positions: dict[int, int] = {}
    unique: list[dict] = []
    members: list[list[int]] = []
    always: list[int] = []
    i = 0
    for d, run in groupby(dicts, key=id):
        n = sum(1 for _ in run)
        if d == id(OUTSIDE):
            always.extend(range(i, i + n))
        else:
            p = positions.get(d)
            if p is None:
                p = positions[d] = len(unique)
                unique.append(dicts[i])
                members.append([])
            members[p].extend(range(i, i + n))
        i += n
    return unique, members, always


def keyed_sort(dicts: list[dict]) -> tuple[list, list, list]:
    """One sort of the item indices keyed by (first index of the dict, index)."""
    first: dict[int, int] = {}
    for i, d in enumerate(dicts):
        first.setdefault(id(d), i)
    out = id(OUTSIDE)
    always = [i for i, d in enumerate(dicts) if d is OUTSIDE]
    keys = [first[id(d)] for d in dicts]
    order = sorted((i for i in range(len(dicts)) if keys[i] != first.get(out, -1)),
                   key=keys.__getitem__)
    unique: list[dict] = []
    members: list[list[int]] = []
    for k, run in groupby(order, key=keys.__getitem__):
        unique.append(dicts[k])
        members.append(list(run))
    return unique, members, always


def table(n: int) -> list[dict]:
    owners = [{} for _ in range(max(1, n // 4))]
    return [OUTSIDE if i % 64 == 63 else owners[(i // 4) % len(owners)] for i in range(n)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--sizes", default="1000,10000,100000,175000,250000")
    args = parser.parse_args()
    arms = [library_loop, numpy_unique, runs_of_one_dict, keyed_sort]
    print("items  " + "  ".join(f"{a.__name__:>16}" for a in arms) + "   (ms, median; ratio to "
          "library_loop)")
    for n in map(int, args.sizes.split(",")):
        dicts = table(n)
        want = library_loop(dicts)
        times: dict[str, list[float]] = {a.__name__: [] for a in arms}
        for arm in arms:
            got = arm(dicts)
            assert [list(map(id, got[0])), got[1], got[2]] == \
                [list(map(id, want[0])), want[1], want[2]], arm.__name__
        gc.collect()
        gc.disable()
        for _ in range(args.repeat):
            for arm in arms:  # alternating: the load hits every arm alike
                start = time.process_time()
                arm(dicts)
                times[arm.__name__].append(time.process_time() - start)
        gc.enable()
        base = statistics.median(times["library_loop"])
        cells = []
        for arm in arms:
            m = statistics.median(times[arm.__name__])
            cells.append(f"{m * 1e3:8.2f} ({m / base:4.2f}x)")
        print(f"{n:6d}  " + "  ".join(f"{c:>16}" for c in cells))


if __name__ == "__main__":
    main()
