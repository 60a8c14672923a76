"""``derivgraph audit vllm``: vLLM's own classes through a real reload judge static findings."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from derivgraph.cli.common import UsageError, add_format, progress, quiet_third_party

__all__ = ["add_parser", "cmd_vllm"]


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``vllm`` to the ``audit`` subcommands; returns its parser."""
    p = subparsers.add_parser(
        "vllm", help="build vLLM's quant/experts classes on CPU, reload them, judge findings",
        description="For every case of vllm_integration.builders: build with seed A, census, "
        "reload with seed B through vLLM's real layerwise path, census, compare with a cold "
        "start of B; mark each static finding on the case's classes confirmed (moved or stale "
        "observed), refuted (kept and fresh) or not_runnable.")
    p.add_argument("--case", action="append", default=[], metavar="NAME",
                   help="run only this case (repeatable); default: every case")
    p.add_argument("--list", action="store_true", help="list the cases and exit")
    add_format(p)
    p.set_defaults(func=cmd_vllm)
    return p


def cmd_vllm(args: argparse.Namespace) -> int:
    """Run :func:`vllm_integration.executable_audit.run_audit`; 2 if vLLM is missing."""
    import torch  # noqa: F401  (its log handlers exist before the filter is installed)

    if not args.verbose:
        quiet_third_party()
    try:
        from vllm_integration.executable_audit import audit_cases as cases  # lazy: torch
        from vllm_integration.executable_audit import run_audit
    except ImportError as exc:
        raise UsageError(f"derivgraph audit vllm needs vLLM installed: {exc}") from None
    if not args.verbose:
        quiet_third_party()  # vLLM installed its own handlers on import
    if args.list:
        for case in cases():
            sys.stdout.write(f"{case.name}: {', '.join(case.classes)}\n")
        return 0
    known = [c.name for c in cases()]
    unknown = [n for n in args.case if n not in known]
    if unknown:
        raise UsageError(f"unknown case(s) {', '.join(unknown)}; --list shows {len(known)}")
    with progress("audit vllm", enabled=args.format == "text") as step:
        audit = run_audit(names=args.case, progress=step)
    if args.format == "json":
        sys.stdout.write(json.dumps(audit.as_json(), indent=2) + "\n")
    else:
        sys.stdout.write(audit.render() + "\n")
    return 0
