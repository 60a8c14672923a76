"""``derivgraph audit runtime``: the reload oracle from the command line."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from typing import Any

from derivgraph.cli.common import (
    add_format,
    add_plan_specs,
    add_require_match,
    import_ref,
    required_names,
    specs_from_args,
)

__all__ = ["add_runtime_parser", "cmd_runtime"]

logger = logging.getLogger(__name__)

_PROTOCOL = """\
protocol:
  FACTORY()    returns a model with weights A loaded and its post-load processing done:
               a cold start of A, as the engine builds it.
  FUNC(model)  reloads that model in place with weights B, exactly as the engine does
               (load, then whatever post-load step the engine reruns).
  COLD()       (--cold) returns a fresh cold start of B: built, loaded with B and
               post-processed, never having held A.

  The audit takes a census of COLD() (then drops the model), builds FACTORY(), compiles
  the plan (built-in and plugin specs plus --specs) as an engine would after its first
  post-load step, takes the startup census (what captured graphs read), calls FUNC, runs
  the plan's refill, takes another census and diffs:
    moved  a startup tensor's path holds another object, address or layout;
    stale  the value at a path differs from COLD's census at the same path;
    gone   a startup path holds no tensor any more;
    new    a tensor or Python float that did not exist at startup (reported, never fails);
    recapture  a Python float changed since startup (graphs baked the old value).
  A cold reference cannot be made from FACTORY and FUNC alone (FACTORY() then FUNC is
  itself a reload), so without --cold the stale check is skipped, unless --round-trip:
  FUNC is then called a second time and must switch back to A, and the model is diffed
  against the startup census, which is a cold start of A (A -> B -> A).

  Without --cold the A->B reload is also checked by the unrefreshed heuristic: a tensor
  kept in place whose value did not change although every loaded tensor (parameter,
  persistent buffer) of its module changed is reported as stale in place. It cannot see a
  tensor derived from another module's weights, a partial reload or a wrong new value;
  --round-trip alone cannot see a tensor never refreshed (back on A its old value is right
  again); only --cold sees every stale value. The output says so (blind_spots in JSON).

  --repeat [N] (default 3) is the same-weight oracle: FUNC must reload the SAME weights as
  FACTORY, N times; COLD (optional) is then a cold start of those weights (default: compare
  with the startup census). Printed per reload: tensors changed k/T, at new addresses, values
  differing, Python scalars changed. It catches in-place folds applied once per post-load run
  instead of once per load; it cannot see a tensor never refreshed.

  Each finding is declared (a plan covers the tensor) or undeclared. --no-plan audits the
  engine alone; --no-refill compiles the plan to classify but does not run it.

  --verify-specs (on by default with a plan) also compares every declared derived tensor
  with a fresh evaluation of its spec after each reload (SPEC-VALUE, DG055): it catches a
  tensor something wrote after the pass, or an engine computing it otherwise than the spec.

exit status: 0 (the last line then says PASS, or FINDINGS: a report), or with --strict 1
(the last line says FAIL) on any moved, stale, unrefreshed or gone finding, any
spec-value difference or any undeclared one (with --repeat: on any tensor or scalar
changed); 1 also when a spec is invalid or cannot be adopted; 2 when a reference does not
resolve.

example:
  derivgraph audit runtime --model my_models:build_a --reload my_models:load_b \\
      --cold my_models:build_b --specs my_specs.yaml --format json --strict
  derivgraph audit runtime --model my_models:build_a --reload my_models:reload_a \
      --cold my_models:build_a --repeat 3 --strict
"""


def add_runtime_parser(audit_sub: Any) -> argparse.ArgumentParser:
    """Add ``runtime`` to the ``audit`` subcommands; returns its parser."""
    p = audit_sub.add_parser(
        "runtime", help="reload a model and report moved, stale and undeclared tensors",
        description="Census every tensor reachable from a model (parameters, buffers,\n"
        "attributes of nested objects, lists, dicts, partials, closures, Python floats),\n"
        "reload it, and compare against its startup census and a cold start.",
        epilog=_PROTOCOL, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True, metavar="MODULE:FACTORY",
                   help="zero-argument callable returning a loaded, post-processed model (A)")
    p.add_argument("--reload", required=True, metavar="MODULE:FUNC",
                   help="callable FUNC(model) reloading the model in place with weights B")
    p.add_argument("--cold", metavar="MODULE:FACTORY",
                   help="zero-argument callable returning a cold start of B (stale check)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--round-trip", action="store_true",
                      help="call FUNC again (it must switch back to A) and check A -> B -> A")
    mode.add_argument("--repeat", type=int, nargs="?", const=3, default=None, metavar="N",
                      help="same-weight oracle: FUNC reloads the SAME weights, N times "
                      "(default 3); COLD is then a cold start of those weights")
    add_plan_specs(p, "compile no plan: audit the engine alone (everything undeclared)")
    p.add_argument("--no-refill", action="store_true",
                   help="compile the plan to classify findings, but do not run its refill")
    p.add_argument("--verify-specs", action=argparse.BooleanOptionalAction, default=True,
                   help="after each reload, compare every declared derived tensor with a fresh "
                   "evaluation of its spec's formula (within its tolerance; exact by default) "
                   "and fail on a difference (on by default; costs one eager evaluation of "
                   "every formula, about one reload pass op by op, and one comparison per "
                   "declared tensor; engine-computed and scalar kinds are listed as not "
                   "recomputable)")
    p.add_argument("--ignore", nargs="*", default=[], metavar="GLOB",
                   help="paths to skip, e.g. '*.workspace' (scratch with meaningless values)")
    p.add_argument("--max-depth", type=int, default=12,
                   help="attribute hops from a module the census follows (default 12)")
    add_format(p)
    add_require_match(p)
    p.add_argument("--limit", type=int, default=30, help="findings shown per reload (text)")
    p.add_argument("--strict", action="store_true",
                   help="exit 1 on any moved, stale, gone or undeclared finding")
    p.set_defaults(func=cmd_runtime)
    return p


def cmd_runtime(args: argparse.Namespace) -> int:
    """Run :func:`~derivgraph.audit.runtime.oracle.audit_reload` as the arguments say."""
    from derivgraph.audit.runtime.oracle import audit_reload  # lazy: torch at startup

    factory = import_ref(args.model)
    reload = import_ref(args.reload)
    cold = import_ref(args.cold) if args.cold else None
    specs = None
    if not args.no_plan:
        specs = specs_from_args(args.specs)
    elif args.specs:
        logger.warning("--specs is ignored with --no-plan")
    if args.repeat is not None:
        return _repeat(args, factory, reload, cold, specs)
    report = audit_reload(factory, reload, cold=cold,
                          reload_back=reload if args.round_trip else None, specs=specs,
                          refill=not args.no_refill, ignore=args.ignore,
                          max_depth=args.max_depth, verify_specs=args.verify_specs,
                          require_match=required_names(args))
    _emit(report, args)
    if not report.stale_checked:
        sys.stderr.write("note: stale values were not checked; give --cold or --round-trip\n")
    return 1 if args.strict and not report.ok() else 0


def _emit(report: Any, args: argparse.Namespace) -> None:
    """Print a report as ``--format`` says (JSON, or text limited to ``--limit`` rows)."""
    if args.format == "json":
        sys.stdout.write(json.dumps(report.as_json(), indent=2) + "\n")
    else:
        sys.stdout.write(report.render(args.limit, strict=args.strict) + "\n")


def _repeat(args: argparse.Namespace, factory: Any, reload: Any, cold: Any, specs: Any) -> int:
    from derivgraph.audit.runtime.repeat import repeat_oracle  # lazy: torch at startup

    report = repeat_oracle(factory, reload, cold=cold, repeat=args.repeat, specs=specs,
                           refill=not args.no_refill, ignore=args.ignore,
                           max_depth=args.max_depth, require_match=required_names(args))
    _emit(report, args)
    return 1 if args.strict and not report.ok() else 0
