"""``derivgraph bench``: its parser (light: torch loads only when the command runs)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from derivgraph.cli.common import add_format, check_device, progress

__all__ = ["add_parser"]


def add_parser(subparsers: Any) -> None:
    """Add ``bench`` to the top-level subcommands."""
    p = subparsers.add_parser("bench", help="benchmark the reload pass against the naive rerun")
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    p.add_argument("--workload", choices=["reference", "deepseek"], default="reference")
    add_format(p)
    p.add_argument("--repeat", type=int, default=21)
    p.add_argument("--layers", type=int, default=61)
    p.add_argument("--scale", type=float, default=None,
                   help="deepseek K/V stack size factor (default 1 on cuda, 1/32 on cpu)")
    p.set_defaults(func=_cmd)


def _cmd(args: argparse.Namespace) -> int:
    from derivgraph.tools.bench import bench  # lazy: torch at startup

    check_device(args.device)
    with progress("bench", enabled=args.format == "text") as step:
        step(0, None, f"{args.workload} on {args.device}")
        result = bench(args.device, args.workload, repeat=args.repeat, layers=args.layers,
                       scale=args.scale)
    if args.format == "json":
        sys.stdout.write(json.dumps(result) + "\n")
    else:
        for key, value in result.items():
            sys.stdout.write(f"{key:>22}: {value}\n")
    return 0
