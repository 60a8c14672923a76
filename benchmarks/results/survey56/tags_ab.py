"""In-process A/B of ``DictVersions.changed`` + ``adopt`` (the guard's per-reload use) in the
tiny vLLM Llama's pattern: 108 watched dicts, the same 30 of them stored into before every read.
The base tree's ``dict_versions`` is loaded by path beside this tree's; the arms alternate (order
reversed every other round), each call timed alone (``perf_counter_ns``), with the caches
flushed before it (a 32 MiB write, as vLLM's reload streams the weights) unless ``--warm``.

    PYTHONPATH=$TREE python3 benchmarks/results/survey56/tags_ab.py --base /tmp/base_survey56 \
        --rounds 3001 [--warm]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from module_ab import base_module  # noqa: E402

from derivgraph import dict_versions  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--base", required=True)
    parser.add_argument("--rounds", type=int, default=3001)
    parser.add_argument("--warm", action="store_true")
    parser.add_argument("--watched", type=int, default=108)
    parser.add_argument("--moved", type=int, default=30)
    args = parser.parse_args()
    base = base_module(args.base, "derivgraph/dict_versions.py")
    flush = np.zeros(4 << 20)  # 32 MiB
    arms: dict[str, tuple[Any, list[dict[str, Any]]]] = {}
    step = max(1, args.watched // args.moved)
    moved = list(range(0, args.watched, step))[:args.moved]
    for name, module in (("base", base), ("mine", dict_versions)):
        dicts = [{"k": i, "cpu_linear": object()} for i in range(args.watched)]
        arms[name] = (module.DictVersions(dicts), dicts)
    times: dict[str, list[int]] = {"base": [], "mine": []}
    for r in range(args.rounds):
        order = ["base", "mine"] if r % 2 == 0 else ["mine", "base"]
        for name in order:
            versions, dicts = arms[name]
            for i in moved:
                dicts[i]["cpu_linear"] = object()
            if not args.warm:
                flush += 1.0
            start = time.perf_counter_ns()
            found = versions.changed()
            versions.adopt()
            times[name].append(time.perf_counter_ns() - start)
            assert found == moved, (name, found)
    skip = min(10, args.rounds // 10)  # the first rounds build the shortcut's state
    for name, xs in times.items():
        xs = xs[skip:]
        print(f"{name} median {statistics.median(xs) / 1e3:.2f} us  "
              f"min {min(xs) / 1e3:.2f} us  q25 {np.percentile(xs, 25) / 1e3:.2f} us")
    wins = sum(m < b for b, m in zip(times["base"][skip:], times["mine"][skip:]))
    print(f"mine faster than base in {wins} of {len(times['base']) - skip} rounds "
          f"({'warm' if args.warm else 'caches flushed'}, {args.watched} dicts, "
          f"{len(moved)} moved)")


if __name__ == "__main__":
    main()
