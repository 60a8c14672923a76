"""Match specs to a live ``nn.Module``: which module each spec applies to.

Matching reads class names and attributes only; it imports nothing from the engine.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from torch import nn

from .paths import MISSING, get_path, join, matches_class
from .spec import Spec, Target

__all__ = ["BoundSpec", "match_specs", "target_matches"]


@dataclass
class BoundSpec:
    """A spec applied to one module of the model."""

    spec: Spec
    module_path: str
    module: nn.Module

    def qualify(self, path: str) -> str:
        """A path from the module, made relative to the model root."""
        return join(self.module_path, path)


def _is_one_of(value: Any, options: Any) -> bool:
    options = options if isinstance(options, list) else [options]
    if not isinstance(value, (int, float, str)) and value is not None:
        value = getattr(value, "value", value)  # enums compare by value
    return value in options or str(value) in [str(o) for o in options]


def _where_holds(module: nn.Module, where: dict[str, Any]) -> bool:
    """Every predicate holds: ``path: value``, ``path: [values]`` or ``path: {not: values}``."""
    for path, wanted in where.items():
        value = get_path(module, path)
        if value is MISSING:
            return False
        if isinstance(wanted, dict) and set(wanted) == {"not"}:
            if _is_one_of(value, wanted["not"]):
                return False
        elif not _is_one_of(value, wanted):
            return False
    return True


def target_matches(target: Target, module: nn.Module) -> bool:
    """True if ``target`` applies to ``module``."""
    if target.module_class and not matches_class(module, target.module_class):
        return False
    if target.quant_method_class:
        qm = getattr(module, "quant_method", None)
        if qm is None or not matches_class(qm, target.quant_method_class):
            return False
    if target.object:
        obj = get_path(module, target.object)
        if obj is MISSING or obj is None:
            return False
        if target.object_class and not matches_class(obj, target.object_class):
            return False
    return _where_holds(module, target.where)


def match_specs(model: nn.Module, specs: Iterable[Spec]) -> list[BoundSpec]:
    """Every (spec, module) pair where the spec's target matches, in module order."""
    specs = list(specs)
    bound: list[BoundSpec] = []
    for path, module in model.named_modules():
        for spec in specs:
            if target_matches(spec.target, module):
                bound.append(BoundSpec(spec, path, module))
    return bound
