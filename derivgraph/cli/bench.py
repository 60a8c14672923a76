"""``derivgraph bench``: its parser (light: torch loads only when the command runs)."""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
from typing import Any

from derivgraph.cli.common import UsageError, add_format, check_device, progress

__all__ = ["add_parser"]


def add_parser(subparsers: Any) -> None:
    """Add ``bench`` to the top-level subcommands."""
    p = subparsers.add_parser("bench", help="benchmark the reload pass against the naive rerun")
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    p.add_argument("--workload", choices=["reference", "deepseek", "scaling", "vllm"],
                   default="reference",
                   help="scaling: compile time against model construction time; vllm: vLLM's "
                   "reload_weights on a tiny Llama with the plugin against without (CPU, the "
                   "thread's CPU clock; needs the vllm extra)")
    add_format(p)
    p.add_argument("--repeat", type=int, default=21)
    p.add_argument("--layers", type=int, default=61)
    p.add_argument("--scale", type=float, default=None,
                   help="deepseek K/V stack size factor (default 1 on cuda, 1/32 on cpu)")
    p.add_argument("--sizes", type=int, nargs="+", default=None,
                   help="scaling: derived-tensor counts (default 1000 10000 100000)")
    p.set_defaults(func=_cmd)


def _cmd(args: argparse.Namespace) -> int:
    if args.workload == "vllm" and args.device != "cpu":
        raise UsageError("--workload vllm runs vLLM on CPU only (use --device cpu)")
    check_device(args.device)
    with progress("bench", enabled=args.format == "text") as step:
        step(0, None, f"{args.workload} on {args.device}")
        if args.workload == "vllm":
            result = _vllm_reload(args)
        elif args.workload == "scaling":
            from derivgraph.tools.bench_scaling import SCALING_SIZES, scaling_bench

            result = scaling_bench(tuple(args.sizes or SCALING_SIZES), args.device)
        else:
            from derivgraph.tools.bench import bench  # lazy: torch at startup

            result = bench(args.device, args.workload, repeat=args.repeat, layers=args.layers,
                           scale=args.scale)
    if args.format == "json":
        sys.stdout.write(json.dumps(result) + "\n")
    else:
        for key, value in result.items():
            if key != "runs_ms":  # every timed reload: JSON only
                sys.stdout.write(f"{key:>22}: {value}\n")
    return 0


def _vllm_reload(args: argparse.Namespace) -> dict[str, Any]:
    """:mod:`vllm_integration.reload_bench` in a process of its own (vLLM's device choice and
    the gloo process group are process-global); its JSON line."""
    if importlib.util.find_spec("vllm") is None:  # the child imports it
        raise UsageError("--workload vllm needs vLLM 0.33.0: pip install 'derivgraph[vllm]'")
    command = [sys.executable, "-m", "vllm_integration.reload_bench", "--clock", "cpu",
               "--repeat", str(args.repeat)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    lines = done.stdout.strip().splitlines()
    if done.returncode or not lines:
        raise UsageError(f"{' '.join(command[1:])} exited {done.returncode}: "
                         f"{done.stderr.strip()[-2000:]}")
    return json.loads(lines[-1])
