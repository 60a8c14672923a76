"""Op-id column of 25k ids (``%<n>:<name>``, every other number): ``map(str.format)`` against
listcomps; all give equal strings (asserted). Process time, medians of 15, in one process.

    /work/venv/bin/python benchmarks/results/build60/opid_micro.py
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from itertools import repeat
from operator import add

NAME = "reciprocal"
POST = ":" + NAME


def numbers() -> range:
    return range(1001, 1001 + 50000, 2)


VARIANTS: dict[str, Callable[[], list[str]]] = {
    "map format": lambda: list(map("%{}:{}".format, numbers(), repeat(NAME))),
    "fstring lc": lambda: [f"%{i}:{NAME}" for i in numbers()],
    "concat lc": lambda: ["%" + str(i) + POST for i in numbers()],
    "map add str": lambda: list(map(add, map("%".__add__, map(str, numbers())), repeat(POST))),
    "mod lc": lambda: ["%%%d:%s" % (i, NAME) for i in numbers()],  # noqa: UP031
}


def main() -> None:
    assert len({tuple(make()) for make in VARIANTS.values()}) == 1
    got: dict[str, list[float]] = {name: [] for name in VARIANTS}
    for _ in range(15):
        for name, make in VARIANTS.items():
            start = time.process_time()
            make()
            got[name].append(time.process_time() - start)
    for name, times in got.items():
        print(f"{name:12s} {statistics.median(times) * 1e3:.2f} ms")


if __name__ == "__main__":
    main()
