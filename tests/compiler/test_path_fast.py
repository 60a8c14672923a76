"""The missing-attribute shortcut of :func:`derivgraph.paths.step_into` and
:func:`~derivgraph.paths.slot_of` answers exactly what ``getattr``/``hasattr`` would."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
import torch
from torch import nn

import derivgraph.paths as paths
from derivgraph.paths import MISSING, Slot, slot_of, step_into


class Plain(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.scale = nn.Parameter(torch.ones(2), requires_grad=False)


class WithGetattr(Plain):
    def __getattr__(self, name: str) -> Any:
        if name == "made":
            return "from __getattr__"
        return super().__getattr__(name)


def _reference(obj: Any, part: str) -> Any:
    return getattr(obj, part, MISSING)


@pytest.mark.parametrize("part", ["inv", "scale", "forward", "training", "made"])
@pytest.mark.parametrize("cls", [Plain, WithGetattr])
def test_step_into_and_slot_of_agree_with_getattr(cls: type, part: str) -> None:
    module = cls()
    assert step_into(module, part) is _reference(module, part) or \
        step_into(module, part) == _reference(module, part)
    want = Slot.PARAMETER if part == "scale" else \
        Slot.ATTRIBUTE if hasattr(module, part) else Slot.MISSING
    assert slot_of(module, part) == want


def test_a_class_attribute_added_later_is_seen() -> None:
    class Late(Plain):
        pass

    module = Late()
    assert step_into(module, "late") is MISSING and slot_of(module, "late") == Slot.MISSING
    Late.late = 7  # type: ignore[attr-defined]
    assert step_into(module, "late") == 7 and slot_of(module, "late") == Slot.ATTRIBUTE


def test_a_module_registered_as_a_mapping_later_is_read_as_one() -> None:
    class Keyed(Plain):
        def __getitem__(self, key: str) -> Any:
            return f"item {key}"

        def __contains__(self, key: object) -> bool:
            return key == "k"

        def __iter__(self) -> Any:
            return iter(["k"])

        def __len__(self) -> int:
            return 1

    module = Keyed()
    assert step_into(module, "k") is MISSING
    Mapping.register(Keyed)
    assert step_into(module, "k") == "item k"


def test_canary_a_shortcut_without_the_class_check_misses_a_property(
        monkeypatch: pytest.MonkeyPatch) -> None:
    class WithProperty(Plain):
        @property
        def shown(self) -> str:
            return "property"

    module = WithProperty()
    assert step_into(module, "shown") == "property"
    monkeypatch.setattr(paths, "_absent_on_class", lambda cls, part: True)
    assert step_into(module, "shown") is MISSING  # the planted bug is visible
