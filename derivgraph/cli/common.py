"""Helpers every subcommand shares: references, ``--format``, errors, noise and progress.

The conventions they implement (README, "Command line"): one ``--format`` per command
(``--json`` is its alias), ``-v`` before or after the subcommand, errors on stderr, and exit
statuses that say what the output says: 0 nothing failed, 1 the output says ``FAIL`` (or a
spec is invalid), 2 the command could not run (:class:`UsageError`).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import logging
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from derivgraph.errors import Rule, SpecIssue, SpecValidationError, UsageError

if TYPE_CHECKING:
    from derivgraph.spec.model import Spec

__all__ = [
    "ProgressFn", "UsageError", "add_format", "add_require_match", "add_verbose", "build_model",
    "check_device", "import_ref", "load_model_and_specs", "progress", "quiet_third_party",
    "require_some_match", "required_names", "specs_from_args",
]

#: ``progress(done, total, label)``: one step of a long command finished.
ProgressFn = Callable[[int, "int | None", str], None]


def add_format(p: argparse.ArgumentParser, choices: Sequence[str] = ("text", "json")) -> None:
    """``--format CHOICE`` (default ``text``), and ``--json`` as its alias when json is one."""
    alias = "; --json is --format json" if "json" in choices else ""
    p.add_argument("--format", choices=list(choices), default="text",
                   help=f"output format (default text){alias}")
    if "json" in choices:
        p.add_argument("--json", dest="format", action="store_const", const="json",
                       help=argparse.SUPPRESS)


def add_verbose(p: argparse.ArgumentParser) -> None:
    """``-v/--verbose`` on a subcommand too (it never resets a ``-v`` given before it)."""
    p.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS,
                   help="log at INFO level, list what is only counted otherwise")


def import_ref(ref: str) -> Any:
    """``package.module:attr`` (or ``path/file.py:attr``) -> the attribute; a reference that
    does not resolve is a :class:`UsageError`."""
    if ":" not in ref:
        raise UsageError(f"{ref!r} must look like package.module:NAME or path/file.py:NAME")
    mod_name, attr = ref.split(":", 1)
    if mod_name.endswith(".py") or "/" in mod_name:
        path = Path(mod_name)
        if not path.is_file():
            raise UsageError(f"{ref}: no file {path}")
        sys.path.insert(0, str(path.parent.resolve()))
        mod_name = path.stem
    else:
        sys.path.insert(0, str(Path.cwd()))
    try:
        module = importlib.import_module(mod_name)
    except ModuleNotFoundError as exc:
        raise UsageError(f"{ref}: cannot import {exc.name!r} (run from the folder that holds "
                         "the module, or give path/file.py:NAME)") from None
    try:
        return getattr(module, attr)
    except AttributeError:
        raise UsageError(f"{ref}: module {mod_name} has no attribute {attr!r}") from None


def build_model(ref: str, what: str = "FACTORY") -> Any:
    """Call the zero-argument ``FACTORY`` at ``ref``; it must return an ``nn.Module``."""
    from torch import nn

    factory = import_ref(ref)
    if not callable(factory):
        raise UsageError(f"{ref} is a {type(factory).__name__}, not a callable {what}")
    try:
        model = factory()
    except TypeError as exc:
        raise UsageError(f"{ref}: calling it with no arguments failed ({exc}); --model needs a "
                         f"{what}() returning a loaded model") from None
    if not isinstance(model, nn.Module):
        raise UsageError(f"{ref}() returned {type(model).__name__}, not a torch.nn.Module; "
                         f"--model needs a {what}() returning a loaded model")
    return model


def specs_from_args(extra: Sequence[str] | None) -> list[Spec]:
    """The built-in and plugin specs, plus those in the ``--specs`` files or folders."""
    from derivgraph.spec.load import default_specs, load_specs  # lazy: pydantic at startup

    return default_specs() + (load_specs(extra) if extra else [])


def load_model_and_specs(args: argparse.Namespace) -> tuple[Any, list[Spec]]:
    """``--model`` built with the library and ``--specs``; without ``--model``, the demo's
    reference model with its own spec file plus ``--specs``."""
    if args.model:
        return build_model(args.model), specs_from_args(args.specs)
    from derivgraph.spec.load import load_specs  # lazy: pydantic at startup
    from derivgraph.tools.reference_models import (  # lazy: torch at startup
        RefConfig,
        build_reference_model,
        make_weights,
        reference_spec_path,
    )

    model = build_reference_model(make_weights(RefConfig(), 0))
    return model, load_specs([reference_spec_path(), *(args.specs or [])])


def check_device(device: str) -> None:
    """``--device cuda`` without a GPU is a :class:`UsageError`."""
    import torch  # lazy: torch at startup

    if device == "cuda" and not torch.cuda.is_available():
        raise UsageError("--device cuda needs a CUDA GPU, and torch sees none "
                         "(torch.cuda.is_available() is False); run on cpu")


# ---- --require-match -----------------------------------------------------------------------------

def add_plan_specs(p: argparse.ArgumentParser, no_plan_help: str) -> None:
    """``--specs PATH...`` (extra spec files) and ``--no-plan`` (audit runtime, audit capture)."""
    p.add_argument("--specs", nargs="*", default=[], metavar="PATH",
                   help="extra YAML spec files or folders (built-in and plugin specs are "
                   "always included unless --no-plan)")
    p.add_argument("--no-plan", action="store_true", help=no_plan_help)


def add_require_match(p: argparse.ArgumentParser) -> None:
    """``--require-match`` (plan, audit runtime, audit capture)."""
    p.add_argument("--require-match", action="store_true",
                   help="exit 1 (DG rule no-match) when a spec of --specs matches no module "
                   "(without --specs: when no spec matches); otherwise the built-in specs "
                   "that match nothing are only counted (-v lists them)")


def required_names(args: argparse.Namespace) -> bool | list[str]:
    """``require_match`` for :func:`~derivgraph.planner.compile_plan` from ``--require-match``:
    the names of the ``--specs`` specs (none given: nothing required by name)."""
    if not getattr(args, "require_match", False) or not args.specs:
        return False
    from derivgraph.spec.load import load_specs

    return [s.name for s in load_specs(args.specs)]


def require_some_match(args: argparse.Namespace, declared: int, model: Any) -> None:
    """``--require-match`` without ``--specs``: a plan declaring nothing is an error."""
    if getattr(args, "require_match", False) and not args.specs and not declared:
        raise SpecValidationError([SpecIssue(
            Rule.NO_MATCH, f"no spec matches a module of {type(model).__name__}",
            "give the model's specs with --specs, or check their targets")])


# ---- noise --------------------------------------------------------------------------------------

_OURS = ("derivgraph", "vllm_integration", "tests", "__main__")


class _ThirdPartyNoise(logging.Filter):
    """Drops deprecation notices other packages log below ERROR."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.ERROR or record.name.split(".")[0] in _OURS:
            return True
        return "deprecat" not in record.getMessage().lower()


_NOISE = _ThirdPartyNoise()


def quiet_third_party() -> None:
    """Keep other packages' deprecation warnings out of our commands' output (``-v`` keeps
    them). Idempotent: call again after importing a package that installs its own handlers."""
    for category in (DeprecationWarning, FutureWarning, PendingDeprecationWarning):
        warnings.filterwarnings("ignore", category=category)
        for ours in _OURS[:2]:
            warnings.filterwarnings("default", category=category, module=rf"{ours}(\.|$)")
    loggers = [logging.getLogger(), *(v for v in logging.Logger.manager.loggerDict.values()
                                      if isinstance(v, logging.Logger))]
    for logger in loggers:
        for handler in logger.handlers:
            if _NOISE not in handler.filters:
                handler.addFilter(_NOISE)


# ---- progress -----------------------------------------------------------------------------------

@contextlib.contextmanager
def progress(label: str, enabled: bool = True, stream: Any = None) -> Iterator[ProgressFn]:
    """A rich progress bar on a TTY (``stream``, default stderr) while the block runs; a no-op
    in pipes, with ``enabled=False`` (JSON output) or without rich."""
    stream = sys.stderr if stream is None else stream
    rich_progress = None
    if enabled and stream.isatty():
        try:
            rich_progress = importlib.import_module("rich.progress")
            console = importlib.import_module("rich.console").Console(file=stream)
        except ImportError:
            rich_progress = None
    if rich_progress is None:
        yield lambda done, total, item: None
        return
    with rich_progress.Progress(
            rich_progress.TextColumn(label), rich_progress.BarColumn(),
            rich_progress.MofNCompleteColumn(), rich_progress.TimeElapsedColumn(),
            rich_progress.TextColumn("{task.fields[item]}"), console=console,
            transient=True) as bar:
        task = bar.add_task(label, total=None, item="")

        def update(done: int, total: int | None, item: str) -> None:
            bar.update(task, completed=done, total=total, item=item[-60:])

        yield update
