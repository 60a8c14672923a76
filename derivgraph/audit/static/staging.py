"""Staging-copy roots: methods that copy a parameter's ``.data`` into the object's own state.

A CPU-offload helper keeps a pinned host copy of each offloaded weight
(``self._cpu_storage.copy_(param.data)``, vLLM's prefetch offloader) and copies it back into the
GPU slot before every forward. It runs while the model is built and once after it loads, never
on a reload: a reload writes the new weights into the parameter, the staging copy keeps the old
ones, and the next prefetch overwrites the parameter with them.

Such a method is judged like a model-loading root (:data:`.scope.MODEL_LOAD_ROOTS`): it runs
once, and what it stores counts only when it is a copy of an object's tensors (the weight-
derivation filter of :mod:`.load_roots`); a buffer it fills with ``copy_`` is reported at its
allocation. The copy's source is ``.data`` of a local (``param = self._param``), not of
``self``: a module copying its own weight is post-load code's business.

:func:`has_staging_copy` is the text test (before parsing); :func:`is_staging_method` the
parsed test. A staging method that a step method of its class calls
(``forward`` -> ``self._stage()``) refreshes the copy before every use: no root
(:func:`refreshed_per_step`).
"""

from __future__ import annotations

import ast
import re

from derivgraph.audit.static.values import COPY_METHODS
from derivgraph.audit.static.walk import self_attribute, walk

__all__ = ["STAGING_COPY_RE", "STEP_METHODS", "has_staging_copy", "is_staging_method",
           "refreshed_per_step"]

STEP_METHODS = frozenset({"forward", "__call__", "apply"})
"""Methods that run on every step: a staging copy one of them makes again is never stale."""

STAGING_COPY_RE = re.compile(
    r"self\.\w+\.copy_\(\s*(?<![\w.])(?!self\b)\w+\.data\s*[,)]"
    r"|self\.\w+[ \t]*(?::[^=\n]*)?=[ \t]*(?<![\w.])(?!self\b)\w+\.data\.\w+\(")
"""A self attribute filled from, or set to a copy of, a local's ``.data`` (one line)."""


def has_staging_copy(text: str) -> bool:
    """The text test: :data:`STAGING_COPY_RE` on the lines that name ``.data`` only (searching
    a whole file costs as much as the other text tests together: ``self.`` is everywhere)."""
    at = text.find(".data")
    while at >= 0:
        start = text.rfind("\n", 0, at) + 1
        end = text.find("\n", at)
        end = len(text) if end < 0 else end
        if STAGING_COPY_RE.search(text, start, end):
            return True
        at = text.find(".data", end)
    return False


def _local_data(node: ast.expr) -> bool:
    """``param.data`` of a local other than ``self``."""
    return (isinstance(node, ast.Attribute) and node.attr == "data"
            and isinstance(node.value, ast.Name) and node.value.id not in ("self", "cls"))


def is_staging_method(func: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether ``func`` fills ``self.x`` from a local's ``.data`` (``self.x.copy_(p.data)``) or
    stores a copy of it (``self.x = p.data.to("cpu")``)."""
    for node in walk(func):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr == "copy_" and node.args \
                and self_attribute(node.func.value) is not None and _local_data(node.args[0]):
            return True
        if isinstance(node, ast.Assign) \
                and any(self_attribute(t) is not None for t in node.targets) \
                and isinstance(node.value, ast.Call) \
                and isinstance(node.value.func, ast.Attribute) \
                and node.value.func.attr in COPY_METHODS and _local_data(node.value.func.value):
            return True
    return False


def refreshed_per_step(name: str, methods: dict[str, ast.FunctionDef | ast.AsyncFunctionDef]
                       ) -> bool:
    """Whether a :data:`STEP_METHODS` method of the class calls ``self.<name>(...)``."""
    for step in STEP_METHODS & methods.keys():
        for node in walk(methods[step]):
            if isinstance(node, ast.Call) and self_attribute(node.func) == name:
                return True
    return False
