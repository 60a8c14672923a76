"""Interleaved micro A/B of ``accessors.by_name`` on the 100k scaling compile's source names.

usage: PYTHONPATH=<tree> python ab_by_name.py [ROUNDS]
A: the base's pass (one ``setdefault``/``append`` per name); B: this tree's ``by_name`` (the
periodic fast path). The names are the last names of the compile's 50k source paths (what
``read_paths`` hands ``holder_dicts``), built as ``str.rpartition`` builds them. Each round
times A then B (the order flipped every round), 5 calls each; prints medians and N of M.
"""

from __future__ import annotations

import os
import statistics
import sys
import time

from derivgraph.runtime.accessors import by_name


def _base(names):
    groups: dict[str, list[int]] = {}
    for i, name in enumerate(names):
        groups.setdefault(name, []).append(i)
    return groups


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    paths = [f"layers.{i}.{n}" for i in range(25000) for n in ("scale", "weight")]
    names = [p.rpartition(".")[2] for p in paths]
    assert by_name(names) == _base(names)
    a, b = [], []

    def timed(fn) -> float:
        start = time.perf_counter()
        for _ in range(5):
            fn(names)
        return (time.perf_counter() - start) / 5

    for i in range(rounds):
        if i % 2 == 0:
            ta, tb = timed(_base), timed(by_name)
        else:
            tb, ta = timed(by_name), timed(_base)
        a.append(ta)
        b.append(tb)
    wins = sum(x > y for x, y in zip(a, b))
    print(f"by_name over {len(names)} names: A median {statistics.median(a) * 1e3:.2f} ms, "
          f"B median {statistics.median(b) * 1e3:.2f} ms; B faster in {wins} of {rounds}; "
          f"load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
