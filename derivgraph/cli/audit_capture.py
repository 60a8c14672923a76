"""``derivgraph audit capture``: what a captured graph reads, and who keeps it current."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from derivgraph.cli.common import (
    UsageError,
    add_format,
    add_plan_specs,
    add_require_match,
    build_model,
    import_ref,
    require_some_match,
    required_names,
    specs_from_args,
)

__all__ = ["add_parser", "cmd_capture"]

_EPILOG = """\
protocol:
  FACTORY()    returns a loaded, post-processed model (on cpu or cuda).
  FUNC(model)  returns the static input of the forward to capture (the graph captures
               model(input)), or a pair (forward, input) to capture forward(input).

  The plan (built-in and plugin specs plus --specs) is compiled, the forward is captured
  (a real CUDA graph on cuda; on cpu the recorded forward of the demo, after one warm-up
  run) while every tensor the captured ops read is recorded, and each read storage is
  classified: parameter (a parameter or buffer), declared (a derived tensor of the plan),
  activation (made inside the capture, or the input), or undeclared (a long-lived tensor
  no spec declares: stale or freed after a reload). Undeclared reads are shown with the
  ops that read them and a best-effort owner: a census path, a module global, or '?'.

exit status: 0 (the last line says PASS, or FINDINGS: a report), or with --strict 1 (the
last line says FAIL) when the graph reads an undeclared tensor (DG061); 1 also when a spec
is invalid or cannot be adopted; 2 when a reference does not resolve.

example:
  derivgraph audit capture --model my_models:build --forward my_models:static_input \\
      --specs my_specs.yaml --strict
"""


def add_parser(audit_sub: Any) -> argparse.ArgumentParser:
    """Add ``capture`` to the ``audit`` subcommands; returns its parser."""
    p = audit_sub.add_parser(
        "capture", help="record what a captured graph reads; flag undeclared long-lived tensors",
        description="Capture a forward pass and classify every tensor its ops read.",
        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True, metavar="MODULE:FACTORY",
                   help="zero-argument callable returning a loaded, post-processed model")
    p.add_argument("--forward", required=True, metavar="MODULE:FUNC",
                   help="FUNC(model) -> static input, or (forward, static input)")
    add_plan_specs(p, "compile no plan: every derived tensor the graph reads is undeclared")
    p.add_argument("--strict", action="store_true",
                   help="exit 1 when the graph reads an undeclared long-lived tensor")
    add_format(p)
    add_require_match(p)
    p.add_argument("--limit", type=int, default=30, help="reads shown per class (text)")
    p.set_defaults(func=cmd_capture)
    return p


def cmd_capture(args: argparse.Namespace) -> int:
    """Run :func:`~derivgraph.audit.runtime.capture.audit_capture` as the arguments say."""
    import torch  # lazy: torch loads only when the command runs

    from derivgraph.audit.runtime.capture import audit_capture  # lazy: torch
    from derivgraph.planner import compile_plan  # lazy: torch

    model = build_model(args.model)
    made = import_ref(args.forward)(model)
    forward, static_input = made if isinstance(made, tuple) else (None, made)
    if not isinstance(static_input, torch.Tensor):
        raise UsageError(f"{args.forward} returned {type(static_input).__name__}, "
                         "not a tensor or a (forward, tensor) pair")
    declared = None
    if not args.no_plan:
        declared = compile_plan(model, specs_from_args(args.specs),
                                require_match=required_names(args)).declared()
        require_some_match(args, len(declared), model)
    report = audit_capture(model, static_input, forward, declared=declared)
    if args.format == "json":
        sys.stdout.write(json.dumps(report.as_json(), indent=2) + "\n")
    else:
        sys.stdout.write(report.render(args.limit, strict=args.strict) + "\n")
    return 1 if args.strict and not report.ok() else 0
