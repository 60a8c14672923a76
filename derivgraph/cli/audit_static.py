"""``derivgraph audit static``: the static audit from the command line."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib
import json
import logging
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from derivgraph import __version__
from derivgraph.cli.common import add_format, specs_from_args
from derivgraph.errors import BaselineError, ChangedFilesError, PackageNotFound

if TYPE_CHECKING:
    from derivgraph.audit.static.finding import StaticReport
    from derivgraph.audit.static.scan import Progress

__all__ = ["add_static_parser", "cmd_static"]

logger = logging.getLogger(__name__)

_DESCRIPTION = """\
Scan Python source (never importing it) for derived tensors that post-load code stores on
objects: process_weights_after_loading, load_weights, post_load_weights, constructors of
rebuilt objects (experts, kernels, MoE quant configs) and the same-file functions they call.
Each site is matched against the spec library (built-in specs, plugins and --specs) and given a
severity from vLLM 0.33's reload semantics: error (stale or moved under a captured graph after a
reload), warning (likely), info (vLLM's layerwise copy-back handles it; --show-info lists them).
Exit status: 0; 1 with --strict when an error or warning site is undeclared; 2 when nothing
could be scanned (no files, or no file parsed), with or without --strict."""


def add_static_parser(audit_sub: Any) -> None:
    """Add the ``static`` subcommand to the ``audit`` subparsers."""
    p = audit_sub.add_parser(
        "static", help="scan source for derived tensors no spec declares",
        description=_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("paths", nargs="*", metavar="PATH", help="files or folders to scan")
    p.add_argument("--package", metavar="NAME",
                   help="an installed package to scan, located without importing it (e.g. vllm)")
    p.add_argument("--specs", nargs="+", action="extend", default=[], metavar="PATH",
                   help="extra YAML spec files or folders (added to the built-in library)")
    add_format(p, ("text", "json", "sarif"))
    p.add_argument("--strict", action="store_true",
                   help="exit 1 on any undeclared error or warning finding")
    p.add_argument("--output", "-o", metavar="FILE", help="write the report to FILE")
    p.add_argument("--jobs", "-j", type=int, default=None,
                   help="worker processes (default: one per CPU, and 1 after the first phase "
                   "where its workers found the CPUs contended; 1 = in this process)")
    p.add_argument("--suggest", action="store_true",
                   help="text format: print a YAML spec skeleton for every finding")
    p.add_argument("--show-declared", action="store_true",
                   help="text format: also list the sites that specs declare")
    p.add_argument("--verdicts", metavar="FILE",
                   help="JSON of `derivgraph audit vllm --json`: mark each finding confirmed, "
                   "refuted or not_runnable by what vLLM's own classes did under a real reload")
    p.add_argument("--show-info", action="store_true",
                   help="text format: also list info sites (handled by the engine's reload)")
    p.add_argument("--baseline", metavar="FILE",
                   help="a saved --format json or sarif report: list only findings it lacks "
                   "(SARIF keeps all, with baselineState new/unchanged); --strict fails only "
                   "on new ones")
    p.add_argument("--changed-since", metavar="REF",
                   help="audit only the .py files changed since git REF (its merge base with "
                   "HEAD, plus untracked files); the whole tree still feeds calls and readers")
    p.set_defaults(func=cmd_static)


@contextlib.contextmanager
def _progress() -> Iterator[Progress]:
    """A rich progress bar on a TTY stderr, else a logging line every ~10% of the files."""
    rich_progress = None
    if sys.stderr.isatty():
        try:
            rich_progress = importlib.import_module("rich.progress")
        except ImportError:
            logger.debug("rich is not installed; progress goes to the log")
    if rich_progress is not None:
        with rich_progress.Progress(
            rich_progress.TextColumn("static audit"), rich_progress.BarColumn(),
            rich_progress.MofNCompleteColumn(), rich_progress.TimeElapsedColumn(),
            rich_progress.TextColumn("{task.fields[file]}"), transient=True,
        ) as bar:
            task = bar.add_task("scan", total=None, file="")

            def update(done: int, total: int, file: str) -> None:
                bar.update(task, completed=done, total=total, file=file[-60:])

            yield update
        return
    last = [0.0]

    def log(done: int, total: int, file: str) -> None:
        now = time.monotonic()
        if done == total or done % max(total // 10, 1) == 0 or now - last[0] > 5:
            last[0] = now
            logger.info("static audit: %d/%d files (%s)", done, total, file)

    yield log


def _render(report: StaticReport, args: argparse.Namespace) -> str:
    if args.format == "json":
        from derivgraph.audit.static.report import render_json  # lazy: the static audit

        return render_json(report)
    if args.format == "sarif":
        from derivgraph.audit.static.sarif import to_sarif  # lazy: the static audit

        return json.dumps(to_sarif(report, __version__), indent=2)
    from derivgraph.audit.static.report import render_text  # lazy: the static audit

    to_tty = not args.output and sys.stdout.isatty()
    width = shutil.get_terminal_size((160, 24)).columns if to_tty else 160
    return render_text(report, width=width, color=to_tty, show_declared=args.show_declared,
                       suggest=args.suggest, show_info=args.show_info)


def _with_verdicts(report: StaticReport, path: Path) -> StaticReport:
    """``report`` with the executable audit's verdicts applied to its findings."""
    from derivgraph.audit.static.verdicts import (  # lazy: the static audit
        apply_verdicts,
        verdicts_from_json,
    )

    verdicts = verdicts_from_json(json.loads(path.read_text(encoding="utf-8")))
    return dataclasses.replace(report, findings=apply_verdicts(report.findings, verdicts))


def _changed(args: argparse.Namespace) -> frozenset[Path]:
    from derivgraph.audit.static.changed import changed_files  # lazy: the static audit
    from derivgraph.audit.static.sources import locate_package  # lazy: the static audit

    roots = [Path(p) for p in args.paths]
    if args.package:
        roots.append(locate_package(args.package))
    return changed_files(args.changed_since, [r.resolve() for r in roots])


def _baseline(args: argparse.Namespace) -> frozenset[str]:
    from derivgraph.audit.static.baseline import load_baseline  # lazy: the static audit

    return load_baseline(Path(args.baseline))


def _against_baseline(report: StaticReport, baseline: frozenset[str],
                      keep_all: bool) -> StaticReport:
    """Each finding marked new or unchanged; without ``keep_all`` only the new ones stay."""
    from derivgraph.audit.static.baseline import (  # lazy: the static audit
        BaselineState,
        mark_baseline,
    )

    marked = mark_baseline(report.findings, baseline)
    if not keep_all:
        marked = [f for f in marked if f.baseline_state is BaselineState.NEW]
    return dataclasses.replace(report, findings=marked)


def cmd_static(args: argparse.Namespace) -> int:
    """Run the static audit; the exit status follows ``--strict``."""
    if not args.paths and not args.package:
        sys.stderr.write("error: give PATH(s) to scan or --package NAME\n")
        return 2
    from derivgraph.audit.static.scan import scan  # lazy: the static audit

    specs = specs_from_args(args.specs)
    try:
        changed = _changed(args) if args.changed_since else None
        baseline = _baseline(args) if args.baseline else None
        with _progress() as progress:
            report = scan(args.paths, args.package, specs=specs, jobs=args.jobs,
                          progress=progress, changed=changed)
    except (PackageNotFound, FileNotFoundError, BaselineError, ChangedFilesError) as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    if args.verdicts:
        report = _with_verdicts(report, Path(args.verdicts))
    if baseline is not None:
        report = _against_baseline(report, baseline, keep_all=args.format == "sarif")
    text = _render(report, args)
    if args.output:
        Path(args.output).write_text(text + "\n", encoding="utf-8")
        sys.stdout.write(f"wrote {args.format} report of {len(report.findings)} sites "
                         f"({len(report.undeclared())} undeclared) to {args.output}\n")
    else:
        sys.stdout.write(text + "\n")
    if report.nothing_scanned:
        sys.stderr.write("error: nothing could be scanned (no Python files, or none parsed)\n")
        return 2
    # against a baseline only new findings fail (SARIF keeps the unchanged ones, marked)
    failing = [f for f in report.undeclared()
               if f.baseline_state is None or f.baseline_state.value == "new"]
    if args.strict and args.format == "text" and not args.output:
        sys.stdout.write(("FAIL" if failing else "PASS") + f": {len(failing)} undeclared "
                         "error/warning site(s) (--strict)\n")
    return 1 if args.strict and failing else 0
