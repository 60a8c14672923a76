"""Engine-computed tensors at run time: what a recompute refuses and what a refill takes.

The compile half (adoption, meta layouts) is :mod:`derivgraph.compiler.engine`. Here:
``run()`` refuses, before anything is written, a recompute that needs a tensor only the engine
computes (:func:`refuse_recompute`, DG082), and ``refill()`` copies the engine's fresh values
into the startup storage (:func:`take_engine_values`).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping
from typing import Any

import torch

from derivgraph.errors import EngineComputedError, Rule, SpecIssue
from derivgraph.paths import MISSING, get_path, step_into
from derivgraph.runtime.entry import Entry
from derivgraph.spec.kinds import is_engine

__all__ = ["check_refillable", "engine_value", "opaque_entries", "refuse_recompute",
           "take_engine_values"]


def opaque_entries(entries: Mapping[str, Entry]) -> list[str]:
    """Engine tensors no step makes (no formula the plan can run)."""
    return [n for n, e in entries.items() if e.node.input is None and is_engine(e.node.decl)]


def _touches(module_path: str, names: list[str]) -> bool:
    """Whether a reload of ``names`` (exact, prefix or glob) wrote into ``module_path``."""
    if not module_path:
        return True
    depth = module_path.count(".") + 1
    for n in names:
        if n == module_path or n.startswith(module_path + ".") or \
                module_path.startswith(n + "."):
            return True
        if fnmatch.fnmatchcase(module_path, ".".join(n.split(".")[:depth])):
            return True
    return False


def refuse_recompute(entries: Mapping[str, Entry], updated: Iterable[str] | None) -> None:
    """Raise :class:`EngineComputedError` if this recompute needs an opaque engine tensor."""
    names = None if updated is None else list(updated)
    issues = []
    for key in opaque_entries(entries):
        node = entries[key].node
        if names is not None and not _touches(node.bound.module_path, names):
            continue
        issues.append(SpecIssue(
            Rule.ENGINE_VALUE, f"{key} is engine-computed: call refill() after the engine's "
            "post-load step, or register an op that computes it",
            "the recompute path (run) cannot make it; after a reload that reran the post-load "
            "step use plan.refill(), or register the op (derivgraph.register_op) and name it in "
            "the spec's `formula`",
            node.decl.location, key))
    if issues:
        raise EngineComputedError(issues)


def check_refillable(model: Any, entry: Entry) -> None:
    """After a refill step found no fresh value: raise if the engine left an incompatible one."""
    owner = get_path(model, entry.node.owner_path)
    if owner is MISSING or owner is None:
        return  # reported by rebind as a missing owner
    current = get_path(owner, entry.node.decl.name)
    if not isinstance(current, torch.Tensor) or current is entry.storage:
        return
    startup = entry.storage
    raise EngineComputedError([SpecIssue(
        Rule.ENGINE_VALUE, f"the engine's fresh {entry.id} ({list(current.shape)} "
        f"{current.dtype}) cannot be copied into the startup tensor ({list(startup.shape)} "
        f"{startup.dtype})", "a captured graph reads the startup layout: the engine must "
        "keep the layout across reloads, or the graph must be recaptured",
        entry.node.decl.location, entry.id)])


def engine_value(model: Any, entry: Entry, owners: Mapping[str, Any] | None = None) \
        -> torch.Tensor | None:
    """The engine's fresh tensor at ``entry``'s holder, if it can be copied into the storage."""
    path = entry.node.owner_path
    owner = owners.get(path, MISSING) if owners is not None and path else MISSING
    if owner is MISSING:
        owner = get_path(model, path)
    if owner is MISSING or owner is None:
        return None
    current = step_into(owner, entry.node.decl.name)
    if (isinstance(current, torch.Tensor) and current is not entry.storage
            and current.shape == entry.storage.shape and current.dtype == entry.storage.dtype
            and current.device.type != "meta"):
        return current
    return None


def take_engine_values(model: Any, entries: Mapping[str, Entry], targets: Iterable[str],
                       owners: Mapping[str, Any], report: Any) -> set[str]:
    """Copy the engine's fresh value of each of ``targets`` into its startup storage.

    Opaque engine tensors without a usable fresh value are refused before any copy. Returns
    the targets taken from the engine.
    """
    opaque = set(opaque_entries(entries))
    ours, theirs, taken = [], [], set()
    for target in targets:
        entry = entries[target]
        fresh = engine_value(model, entry, owners)
        if fresh is None and target in opaque:
            check_refillable(model, entry)  # raises before any copy if the layout changed
        if fresh is not None:
            ours.append(entry.storage)
            theirs.append(fresh)
            taken.add(target)
            report.bytes += entry.nbytes()
    if ours:
        torch._foreach_copy_(ours, theirs)
    report.taken_from_engine = report.written = report.steps = len(ours)
    return taken
