"""Parameters the engine's layerwise reload skips: a storage rebind of one is not refilled.

vLLM 0.33's layerwise reload (``model_loader/reload/meta.py``) moves every parameter and buffer
of a layer to the meta device and copies the reload's temporaries back into the kept objects,
except the names in its skip set (``SKIP_TENSORS``, which holds ``SKIP_LOAD_TENSORS``). A
skipped parameter stays the live object: the reload loads it in place, then the post-load step
rebinds its storage (``.data =``, ``register_parameter``, ``layer.bias = Parameter(...)``) and
nothing copies it back, so a captured graph keeps reading the old storage.

``replace_parameter`` (category ``replace-layout``) is left out: vLLM 0.33's copies in place
whenever shape, stride, dtype and device match, which a value permutation keeps, so such a site
rebinds only on shapes the audit cannot see; ``.set_()`` is a storage swap already.

:func:`skip_set` reads the set from the scanned tree's ``reload/meta.py`` with :mod:`ast` (never
importing it), falling back to vLLM 0.33.0's set only when the tree has no such file;
:func:`mark_reload_skipped` marks the sites whose store the copy-back would otherwise refill
(:class:`.semantics.Store` ``LAYER_PARAMETER``).
"""

from __future__ import annotations

import ast
import logging
from collections.abc import Iterable, MutableMapping
from dataclasses import replace
from typing import Any

from derivgraph.audit.static.semantics import Store, classify
from derivgraph.audit.static.sites import CategoryId, RawSite

__all__ = ["FALLBACK_SKIP_SET", "REBIND_CATEGORIES", "RULE_ROUND", "SKIP_NAMES", "SKIP_SET_FILE",
           "mark_reload_skipped", "skip_set", "skip_set_of"]

logger = logging.getLogger(__name__)

SKIP_SET_FILE = "model_loader/reload/meta.py"
"""Where the engine defines its reload skip set (a path suffix)."""
SKIP_NAMES = ("SKIP_LOAD_TENSORS", "SKIP_TENSORS")
"""The module-level sets it reads, in order; the last one found is the skip set."""
FALLBACK_SKIP_SET = frozenset({"_expert_map", "expert_mask", "expert_global_to_physical",
                               "expert_physical_to_global", "expert_local_to_global",
                               "e_score_correction_bias", "bias"})
"""vLLM 0.33.0's ``SKIP_TENSORS``: used only when the scanned tree has no :data:`SKIP_SET_FILE`."""
REBIND_CATEGORIES = frozenset({CategoryId.DATA_REBIND, CategoryId.REGISTER,
                               CategoryId.TENSOR_ATTR})
"""Categories whose store always binds new storage (or a new object) to the parameter."""
RULE_ROUND = 28
"""The issue-21 round that added this rule (:attr:`.sites.RawSite.rule_round`)."""


def _strings(node: ast.expr, known: dict[str, frozenset[str]]) -> frozenset[str] | None:
    """The string set an expression builds: a literal, a known name, ``a | b``, ``set(...)``."""
    if isinstance(node, (ast.Set, ast.List, ast.Tuple)):
        out = [e.value for e in node.elts if isinstance(e, ast.Constant)
               and isinstance(e.value, str)]
        return frozenset(out) if len(out) == len(node.elts) else None
    if isinstance(node, ast.Name):
        return known.get(node.id)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        left, right = _strings(node.left, known), _strings(node.right, known)
        return left | right if left is not None and right is not None else None
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id in ("set", "frozenset") and len(node.args) <= 1 and not node.keywords):
        return _strings(node.args[0], known) if node.args else frozenset()
    return None


def skip_set_of(text: str, filename: str = SKIP_SET_FILE) -> frozenset[str]:
    """The skip set a ``reload/meta.py`` source defines (empty when it defines none)."""
    known: dict[str, frozenset[str]] = {}
    for stmt in ast.parse(text, filename).body:
        target = stmt.target if isinstance(stmt, ast.AnnAssign) else (
            stmt.targets[0] if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 else None)
        value = stmt.value if isinstance(stmt, (ast.Assign, ast.AnnAssign)) else None
        if isinstance(target, ast.Name) and target.id in SKIP_NAMES and value is not None:
            names = _strings(value, known)
            if names is None:
                logger.warning("%s: %s is not a set of literal names; ignored", filename,
                               target.id)
                continue
            known[target.id] = names
    for name in reversed(SKIP_NAMES):
        if name in known:
            return known[name]
    return frozenset()


def skip_set(files: Iterable[tuple[str, str]]) -> frozenset[str]:
    """The reload's skip set from the scanned ``(display path, text)`` files, or
    :data:`FALLBACK_SKIP_SET` when none of them is :data:`SKIP_SET_FILE`."""
    for display, text in files:
        if display.replace("\\", "/").endswith(SKIP_SET_FILE):
            try:
                return skip_set_of(text, display)
            except SyntaxError as exc:
                logger.warning("%s: not parsed (%s); reload skip set empty", display, exc.msg)
                return frozenset()
    return FALLBACK_SKIP_SET


def mark_reload_skipped(sites: MutableMapping[Any, tuple[int, RawSite]],
                        skipped: frozenset[str]) -> None:
    """Mark the sites that rebind the storage of a parameter the reload skips (and so never
    refills): their store would otherwise be the copy-back's ``LAYER_PARAMETER``."""
    for key, (i, site) in sites.items():
        if site.attr in skipped and site.category in REBIND_CATEGORIES \
                and classify(site) is Store.LAYER_PARAMETER:
            sites[key] = (i, replace(site, reload_skipped=True, rule_round=RULE_ROUND))
