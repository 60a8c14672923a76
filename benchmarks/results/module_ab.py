"""Shared parts of the in-process A/B scripts: the base tree's copy of a library module loaded by
path beside this tree's, and arms timed alternately in one process (the order reversed every
other round), process time, with medians and how often the second arm won.

    from module_ab import ab_args, alternate, base_module, report
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any

__all__ = ["ab_args", "alternate", "base_module", "report"]


def ab_args(doc: str | None, rounds: int) -> argparse.Namespace:
    """``--base TREE`` (required), ``--size`` (derived tensors, default 100000), ``--rounds``."""
    parser = argparse.ArgumentParser(description=doc)
    parser.add_argument("--base", required=True)
    parser.add_argument("--size", type=int, default=100000)
    parser.add_argument("--rounds", type=int, default=rounds)
    return parser.parse_args()


def base_module(tree: str, relpath: str) -> ModuleType:
    """``relpath`` (e.g. ``derivgraph/runtime/engine.py``) of the base ``tree``, loaded by path
    under the name ``base_<file stem>`` (its imports resolve to this tree's modules)."""
    name = "base_" + relpath.rsplit("/", 1)[-1].removesuffix(".py")
    found = importlib.util.spec_from_file_location(name, f"{tree}/{relpath}")
    if found is None or found.loader is None:
        raise SystemExit(f"no module at {tree}/{relpath}")
    module = sys.modules[name] = importlib.util.module_from_spec(found)
    found.loader.exec_module(module)
    return module


def alternate(rounds: int, arms: dict[str, Callable[[], Any]]) -> dict[str, list[float]]:
    """Each arm's process time per round, the arms in their order in even rounds and reversed
    in odd ones."""
    times: dict[str, list[float]] = {name: [] for name in arms}
    for r in range(rounds):
        order = list(arms.items())
        if r % 2:
            order.reverse()
        for name, fn in order:
            start = time.process_time()
            fn()
            times[name].append(time.process_time() - start)
    return times


def report(times: dict[str, list[float]], first: str = "base", second: str = "mine") -> None:
    """Print each arm's median and times, then how often ``second`` beat ``first``."""
    width = max(map(len, times))
    for name, xs in times.items():
        print(f"{name:{width}s} median {statistics.median(xs):.4f}  {[round(x, 4) for x in xs]}")
    wins = sum(m < b for b, m in zip(times[first], times[second]))
    print(f"{second} faster than {first} in {wins} of {len(times[first])} rounds")
