"""The alternation both scan30 A/B scripts share: passes of the former path and scan30's, in
turn in one process (the machine's load common to both), CPU per pass, the results equal in
every pass."""
import os
import statistics
import time
from collections.abc import Callable
from typing import Any


def alternate(passes: int, one_pass: Callable[[bool], tuple[float, Any]], what: str,
              count: Callable[[Any], int] = len) -> None:
    """Print each pass's CPU seconds, then the medians and per-pass differences."""
    runs: dict[str, list[float]] = {"former": [], "scan30": []}
    reference = None
    print(f"# {time.strftime('%H:%M:%S', time.gmtime())} UTC, load {os.getloadavg()}, {what}")
    for n in range(passes):
        for name in ("former", "scan30"):
            seconds, out = one_pass(name == "former")
            reference = out if reference is None else reference
            assert out == reference, f"pass {n + 1} {name}: different results"
            runs[name].append(seconds)
            print(f"pass {n + 1} {name:7s} cpu {seconds:6.2f} s  {count(out)} results  "
                  f"load {os.getloadavg()[0]:.2f}", flush=True)
    for name, values in runs.items():
        print(f"{name:7s} median cpu {statistics.median(values):.2f} s  "
              f"{[round(v, 2) for v in values]}")
    diffs = [b - a for a, b in zip(runs["former"], runs["scan30"])]
    print("per-pass difference scan30 - former:", [round(d, 2) for d in diffs])
