"""Helpers every subcommand shares: ``module:NAME`` references, spec lists and models."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from derivgraph.spec.model import Spec

__all__ = ["import_ref", "load_model_and_specs", "specs_from_args"]


def import_ref(ref: str) -> Any:
    """``package.module:attr`` (or ``path/to/file.py:attr``) -> the attribute."""
    if ":" not in ref:
        raise SystemExit(f"error: {ref!r} must look like package.module:NAME")
    mod_name, attr = ref.split(":", 1)
    if mod_name.endswith(".py") or "/" in mod_name:
        path = Path(mod_name)
        sys.path.insert(0, str(path.parent.resolve()))
        mod_name = path.stem
    else:
        sys.path.insert(0, str(Path.cwd()))
    module = importlib.import_module(mod_name)
    try:
        return getattr(module, attr)
    except AttributeError:
        raise SystemExit(f"error: {mod_name} has no attribute {attr!r}") from None


def specs_from_args(extra: Sequence[str] | None) -> list[Spec]:
    """The built-in and plugin specs, plus those in the ``--specs`` files or folders."""
    from derivgraph.spec.load import default_specs, load_specs  # lazy: pydantic at startup

    return default_specs() + (load_specs(extra) if extra else [])


def load_model_and_specs(args: argparse.Namespace) -> tuple[Any, list[Spec]]:
    """``--model`` built with the library and ``--specs``; without ``--model``, the demo's
    reference model with its own spec file plus ``--specs``."""
    if args.model:
        model = import_ref(args.model)()
        return model, specs_from_args(args.specs)
    from derivgraph.spec.load import load_specs  # lazy: pydantic at startup
    from derivgraph.tools.reference_models import (  # lazy: torch at startup
        RefConfig,
        build_reference_model,
        make_weights,
        reference_spec_path,
    )

    model = build_reference_model(make_weights(RefConfig(), 0))
    return model, load_specs([reference_spec_path(), *(args.specs or [])])
