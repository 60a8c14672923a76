"""Helpers every subcommand shares: resolving ``module:NAME`` references."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

__all__ = ["import_ref"]


def import_ref(ref: str) -> Any:
    """``package.module:attr`` -> the attribute."""
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
