"""The ``derivgraph`` command: one face over specs, plans, the demo and the audits."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Callable, Sequence
from typing import Any

from derivgraph.audit.table import text_table
from derivgraph.cli import audit, bench, trace
from derivgraph.cli.common import (
    UsageError,
    add_format,
    add_require_match,
    add_verbose,
    check_device,
    import_ref,
    load_model_and_specs,
    progress,
    quiet_third_party,
    require_some_match,
    required_names,
)
from derivgraph.errors import DerivgraphError, SpecValidationError

__all__ = ["main"]

logger = logging.getLogger("derivgraph")


def _out(text: str = "") -> None:
    sys.stdout.write(text + "\n")


# ---- demo ---------------------------------------------------------------------------------------

def cmd_demo(args: argparse.Namespace) -> int:
    from derivgraph.tools.demo import render_table, run_demo  # lazy: torch at startup

    check_device(args.device)
    with progress("demo", enabled=args.format == "text") as step:
        step(0, None, f"reloads on {args.device}")
        result = run_demo(device=args.device)
    _out(json.dumps(result.as_json()) if args.format == "json" else render_table(result))
    return 0 if result.ok() else 1


# ---- specs --------------------------------------------------------------------------------------

def cmd_validate(args: argparse.Namespace) -> int:
    from derivgraph.spec.check import check_specs  # lazy: pydantic at startup
    from derivgraph.spec.load import load_specs  # lazy: pydantic at startup

    specs = load_specs(args.paths)  # SpecValidationError: main prints it on stderr, exit 1
    issues = check_specs(specs)
    if not issues and args.model:  # what only the model shows, without touching it
        from derivgraph.planner import check_plan  # lazy: torch

        issues = check_plan(import_ref(args.model)(), specs)
    if issues:
        raise SpecValidationError(issues)
    _out(f"ok: {len(specs)} spec(s), {sum(len(s.derived) for s in specs)} derived tensor(s)")
    return 0


def _render_graph(g: Any, fmt: str) -> str:
    import networkx as nx

    if fmt == "dot":
        lines = ["digraph derivgraph {", "  rankdir=LR;"]
        shapes = {"source": "box", "param": "note", "derived": "ellipse", "op": "circle"}
        for n, data in g.nodes(data=True):
            lines.append(f'  "{n}" [shape={shapes.get(data.get("kind"), "ellipse")}];')
        lines += [f'  "{u}" -> "{v}";' for u, v in g.edges]
        return "\n".join([*lines, "}"])
    if fmt == "mermaid":
        ids = {n: f"n{i}" for i, n in enumerate(g.nodes)}
        lines = ["flowchart LR"]
        for n, data in g.nodes(data=True):
            left, right = {"source": ("[", "]"), "param": ("[/", "/]")}.get(
                data.get("kind"), ("(", ")"))
            lines.append(f'  {ids[n]}{left}"{n}"{right}')
        lines += [f"  {ids[u]} --> {ids[v]}" for u, v in g.edges]
        return "\n".join(lines)
    return "\n".join(nx.generate_network_text(g, ascii_only=True))


def cmd_graph(args: argparse.Namespace) -> int:
    import networkx as nx

    from derivgraph.spec.check import spec_graph  # lazy: pydantic at startup
    from derivgraph.spec.load import load_specs  # lazy: pydantic at startup

    specs = load_specs([args.spec])
    g = nx.DiGraph()
    for spec in specs:
        sub = spec_graph(spec)
        g.update(nx.relabel_nodes(sub, {n: f"{spec.name}:{n}" for n in sub}) if len(specs) > 1
                 else sub)
    _out(_render_graph(g, args.format))
    return 0


def cmd_schema(args: argparse.Namespace) -> int:
    from derivgraph.spec.schema import spec_schema  # lazy: pydantic at startup

    _out(json.dumps(spec_schema(), indent=2))
    return 0


def cmd_specs(args: argparse.Namespace) -> int:
    from derivgraph.spec.load import default_specs  # lazy: pydantic at startup

    specs = default_specs()
    rows = [{
        "name": s.name,
        "location": str(s.location),
        "target": s.target.model_dump(exclude_defaults=True),
        "derived": [d.name if not d.owner else f"{d.owner}.{d.name}" for d in s.derived],
    } for s in specs]
    if args.format == "json":
        _out(json.dumps(rows, indent=2))
    else:
        for r in rows:
            _out(f"{r['name']}  ({r['location']})")
            _out(f"    target: {json.dumps(r['target'])}")
            _out(f"    derived: {', '.join(r['derived'])}")
    return 0


def cmd_ops(args: argparse.Namespace) -> int:
    from derivgraph.spec.expr import op_catalogue  # torch-free: the committed catalogue

    ops = op_catalogue()
    if args.format == "json":
        _out(json.dumps(ops, indent=2))
        return 0
    for op in ops.values():
        _out(f"{op['signature']:<60} {op['kind']:<8} {'out=' if op['out'] else '    '} "
             f"{op['doc']}")
    return 0


# ---- plan ---------------------------------------------------------------------------------------

def cmd_plan(args: argparse.Namespace) -> int:
    from derivgraph.planner import compile_plan  # lazy: torch at startup

    model, specs = load_model_and_specs(args)
    plan = compile_plan(model, specs, require_match=required_names(args))
    require_some_match(args, len(plan), model)
    if args.source:
        _out(plan.source())
        return 0
    rows = plan.rows()
    if args.format == "json":
        _out(json.dumps(rows, indent=2))
        return 0
    cols = ["node", "owner", "kind", "shape", "dtype", "bytes", "op"]
    for line in text_table(cols, [[r[c] for c in cols] for r in rows]):
        _out(line)
    total = sum(r["bytes"] for r in rows)
    _out(f"\n{len(rows)} derived tensors, {total} bytes, {len(plan.steps)} steps, "
         f"{plan.graph.cse_hits} shared subexpressions")
    for name in plan.not_refillable():
        _out(f"not refillable: graph recapture required: {name} (a Python scalar)")
    return 0


# ---- parser -------------------------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    from derivgraph import __version__

    parser = argparse.ArgumentParser(prog="derivgraph", description=__doc__)
    parser.add_argument("--version", action="version", version=f"derivgraph {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="log at INFO level, list what is only counted otherwise")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("demo", help="naive vs derivgraph reload under a captured graph")
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    add_format(p)
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("validate", help="check spec files (exit 1 on any error)")
    p.add_argument("paths", nargs="+")
    p.add_argument("--model", help="MODULE:FACTORY returning a loaded, post-processed model: "
                   "also check what compile_plan would refuse on it (binding, shapes, values, "
                   "adoption), touching nothing")
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("graph", help="draw a spec file's dependency graph")
    p.add_argument("spec")
    add_format(p, ("text", "dot", "mermaid"))
    p.set_defaults(func=cmd_graph)

    p = sub.add_parser("plan", help="the compiled plan of a model")
    p.add_argument("--model", help="MODULE:FACTORY returning a loaded, post-processed model "
                   "(default: the demo's reference model)")
    p.add_argument("--specs", nargs="*", help="extra YAML spec files or folders")
    p.add_argument("--source", action="store_true", help="print the reload pass as Python")
    add_require_match(p)
    add_format(p)
    p.set_defaults(func=cmd_plan)

    p = sub.add_parser("schema", help="print the spec JSON Schema")
    p.set_defaults(func=cmd_schema)

    p = sub.add_parser("specs", help="list the built-in and plugin specs")
    add_format(p)
    p.set_defaults(func=cmd_specs)

    p = sub.add_parser("ops", help="list the formula ops")
    add_format(p)
    p.set_defaults(func=cmd_ops)

    audit.add_audit_parser(sub)
    bench.add_parser(sub)
    trace.add_parser(sub)
    _verbose_everywhere(parser)
    return parser


def _verbose_everywhere(parser: argparse.ArgumentParser) -> None:
    """Let every subcommand take ``-v`` after its name too."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                add_verbose(child)
                _verbose_everywhere(child)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``derivgraph`` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    if not args.verbose:
        quiet_third_party()
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        return func(args)
    except UsageError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    except DerivgraphError as exc:
        sys.stderr.write(f"{exc}\n")
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
