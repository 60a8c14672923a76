"""``derivgraph trace``: the command line face of the tracer."""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import sys
from pathlib import Path
from typing import Any

from derivgraph.cli.common import (
    UsageError,
    add_format,
    import_ref,
    progress,
    quiet_third_party,
)

__all__ = ["add_parser", "cmd_trace", "default_post_load"]

logger = logging.getLogger(__name__)


def _out(text: str = "") -> None:
    sys.stdout.write(text + "\n")


def default_post_load(model: Any) -> None:
    """The post-load step when ``--post-load`` is not given: the model's own
    ``process_weights_after_loading()`` if it has one, else vLLM's per-layer order (each
    module's ``quant_method.process_weights_after_loading(module)``)."""
    own = getattr(model, "process_weights_after_loading", None)
    if callable(own):
        own()
        return
    for module in model.modules():
        method = getattr(module, "quant_method", None)
        step = getattr(method, "process_weights_after_loading", None)
        if callable(step):
            step(module)


def add_parser(subparsers: Any) -> None:
    """Register ``derivgraph trace``."""
    p = subparsers.add_parser(
        "trace", help="draft a spec from a live post-load step (proven A->B->A before writing)")
    p.add_argument("--model", help="MODULE:FACTORY returning a model with weights loaded and "
                   "its post-load step NOT yet run (default: the reference modules)")
    p.add_argument("--post-load", help="MODULE:FUNC running the post-load step on the model "
                   "(default: model.process_weights_after_loading() or each quant method's)")
    p.add_argument("--package", choices=["vllm"], help="draft specs for every vLLM 0.33.0 "
                   "quant method and kernel vllm_integration.builders can build on CPU")
    p.add_argument("-o", "--output", help="write the proven draft here (with --package: a "
                   "folder, one file per case)")
    add_format(p)
    p.set_defaults(func=cmd_trace)


def _summary(name: str, outcome: Any) -> dict[str, Any]:
    draft = outcome.draft
    return {
        "name": name,
        "proven": outcome.proof.ok,
        "proof": outcome.proof.summary(),
        "specs": [{"name": s.name, "module_class": s.module_class, "instances": len(s.instances),
                   "derived": len(s.entries)} for s in draft.specs],
        "not_expressible": [{"path": u.path, "reason": u.reason} for u in draft.unexpressed],
        "ops_to_register": draft.opaque_ops,
        "sources_replaced": draft.sources_replaced,
        "notes": draft.notes,
        "unproven": sorted(outcome.proof.unproven),
        "complete": draft.complete,
        "caveats": draft.caveats,
    }


def _print(summary: dict[str, Any]) -> None:
    _out(f"== {summary['name']}")
    for s in summary["specs"]:
        _out(f"  spec {s['name']}: {s['module_class']} x{s['instances']}, "
             f"{s['derived']} derived")
    _out(f"  {summary['proof']}")
    for u in summary["not_expressible"]:
        _out(f"  not expressible: {u['path']}: {u['reason']}")
    if summary["ops_to_register"]:
        _out(f"  ops to register: {', '.join(summary['ops_to_register'])}")
    for p in summary["sources_replaced"]:
        _out(f"  source replaced by the step (kernel format): {p}")
    for n in summary["notes"]:
        _out(f"  note: {n}")
    for c in summary["caveats"]:
        _out(f"  caveat: {c}")
    if not summary["complete"]:
        _out("  the draft is not complete: see the caveats and what is not expressible")


def _write(path: Path, outcome: Any, quiet: bool = False) -> bool:
    """Write a proven draft; ``quiet`` (``--json``): say nothing, the summary's ``written``
    field tells."""
    if not outcome.proof.ok:
        if not quiet:
            _out(f"  not written: {path} (the draft is not proven)")
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(outcome.yaml)
    if not quiet:
        _out(f"  wrote {path}")
    return True


def cmd_trace(args: argparse.Namespace) -> int:
    """Trace, prove, print, write. Exit 0 only when every draft is proven."""
    if args.package:
        return _trace_package(args)
    from derivgraph.trace.api import trace_model  # lazy: torch at startup

    if args.model:
        factory = import_ref(args.model)
        origin = args.model
    else:
        from derivgraph.tools.reference import reference_model  # lazy: torch at startup

        factory, origin = reference_model, "derivgraph.tools.reference:reference_model"
        args.post_load = args.post_load or "derivgraph.tools.reference:reference_post_load"
    post_load = import_ref(args.post_load) if args.post_load else default_post_load
    outcome = trace_model(factory, post_load, origin)
    summary = _summary(origin, outcome)
    if args.format == "text":
        _print(summary)
        if not args.output:
            _out("")
            _out(outcome.yaml.rstrip())
    if args.output:
        written = _write(Path(args.output), outcome, quiet=args.format == "json")
        summary["written"] = args.output if written else None
    if args.format == "json":
        _out(json.dumps(summary, indent=2))
    return 0 if outcome.proof.ok else 1


def _trace_package(args: argparse.Namespace) -> int:
    import torch  # noqa: F401  (its log handlers exist before the noise filter is installed)

    try:  # by module name (sys.modules), not as the package's attribute
        builders = importlib.import_module("vllm_integration.builders")
    except ImportError as exc:
        raise UsageError(f"--package vllm needs vllm_integration.builders (vLLM 0.33.0 and the "
                         f"derivgraph vLLM integration): {exc}") from None
    if not args.verbose:
        quiet_third_party()  # vLLM installed its own handlers on import
    from derivgraph.trace.api import trace_builder  # lazy: torch at startup

    json_out = args.format == "json"
    with progress("trace --package vllm", enabled=not json_out) as step:
        return _trace_cases(args, builders, trace_builder, json_out, step)


def _trace_cases(args: argparse.Namespace, builders: Any, trace_builder: Any, json_out: bool,
                 step: Any) -> int:

    not_runnable = getattr(builders, "NotRunnable", ())
    rows, proven, total = [], 0, 0
    all_cases = builders.cases()
    for i, case in enumerate(all_cases):
        step(i, len(all_cases), case.name)
        try:
            outcome = trace_builder(case.build, case.reload, case.name, label=case.name)
        except not_runnable as exc:  # type: ignore[misc]
            rows.append({"name": case.name, "not_runnable": str(exc)})
            if not json_out:
                _out(f"== {case.name}: not runnable on this machine: {exc}")
            continue
        total += 1
        proven += outcome.proof.ok
        summary = _summary(case.name, outcome)
        summary["vllm_classes"] = list(case.classes)
        rows.append(summary)
        if not json_out:
            _print(summary)
        if args.output:
            path = Path(args.output) / f"{case.name}.yaml"
            summary["written"] = str(path) if _write(path, outcome, quiet=json_out) else None
    if json_out:
        _out(json.dumps(rows, indent=2))
    else:
        _out(f"\n{proven}/{total} runnable case(s) drafted and proven; "
             f"{len(rows) - total} not runnable")
    return 0 if proven == total else 1
