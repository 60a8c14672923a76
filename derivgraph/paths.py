"""Attribute paths: read and bind objects at dotted paths from a module.

A path is ``a.b.0.c``: attribute names, and integers that index lists, tuples,
``ModuleList``s and dicts. Binding a tensor respects the slot it belongs in: a registered
parameter, a registered buffer, or a plain attribute (also on frozen dataclasses, such as
quant-config descriptors).
"""

from __future__ import annotations

import abc
import dataclasses
import functools
import operator
from collections.abc import Iterable, Mapping, Sequence
from itertools import repeat
from typing import Any

from torch import nn

from derivgraph._enum import StrEnum

__all__ = ["MISSING", "MODULE_REGISTRIES", "ModuleOwners", "Slot", "absent_on_modules",
           "class_names", "get_path", "holder_dict", "join", "matches_class", "set_slot", "slot_of",
           "step_into"]

MISSING: Any = object()


class Slot(StrEnum):
    """Where an owner holds a value (see :func:`derivgraph.paths.slot_of`)."""

    PARAMETER = "parameter"
    BUFFER = "buffer"
    ATTRIBUTE = "attribute"
    ELEMENT = "element"  # an item of a tuple: the tuple is put back whole
    MISSING = "missing"


def join(*parts: str) -> str:
    """Join path pieces, skipping empty ones."""
    if len(parts) == 2:  # the common case (a module path and a name), without a generator
        a, b = parts
        return f"{a}.{b}" if a and b else a or b
    return ".".join(p for p in parts if p)


_MODULE_GETATTR = nn.Module.__getattr__
_GETATTRIBUTE = object.__getattribute__


def _absent_on_class(cls: type, part: str) -> bool:
    """Whether ``getattr`` on a module of class ``cls`` that holds ``part`` in no registry and
    not in its ``__dict__`` can only raise: the plain attribute protocol of ``nn.Module``, no
    class attribute ``part`` anywhere in the MRO (read now: classes can change), not a
    mapping."""
    if cls.__getattr__ is not _MODULE_GETATTR or cls.__getattribute__ is not _GETATTRIBUTE:
        return False
    for c in cls.__mro__:
        if part in c.__dict__:
            return False
    return not _is_mapping(cls, abc.get_cache_token())


@functools.lru_cache(maxsize=1024)
def _is_mapping(cls: type, token: object) -> bool:
    """``issubclass(cls, Mapping)``, remembered until an ABC registers a class (the token)."""
    return issubclass(cls, Mapping)


def absent_on_modules(objs: Sequence[Any], part: str) -> bool:
    """Whether :func:`step_into` ``(obj, part)`` is :data:`MISSING` for every object of
    ``objs``, proven by its module branch a class at a time: each is an ``nn.Module`` of its
    own ``__class__`` holding ``part`` in no registry and not in its ``__dict__``, and each
    class passes :func:`_absent_on_class` (False: not proven, e.g. one of them holds it)."""
    return ModuleOwners(objs).absent(part)


class ModuleOwners:
    """What :func:`absent_on_modules` reads of ``objs`` whatever the name: their classes,
    whether every one is an ``nn.Module`` of its own ``__class__``, their ``__dict__`` s and
    (when first needed, one at a time) their registries; each read once, so that several
    names over the same owners (a stamped table's columns) read them once. Only for owners
    nothing writes to while it is asked (the reads are kept)."""

    __slots__ = ("objs", "classes", "_plain", "_dicts", "_registries")

    def __init__(self, objs: Sequence[Any]):
        self.objs = objs
        self.classes = set(map(type, objs))
        self._plain: bool | None = None  # every class a module, every object of its own class
        self._dicts: list[Any] = []
        # per MODULE_REGISTRIES' registry, read in order when first needed: the union of
        # every owner's keys (:func:`_str_keys`; None: the registries are swept per name)
        self._registries: list[set[str] | None] = []

    def absent(self, part: str) -> bool:
        """:func:`absent_on_modules` of these owners and ``part``."""
        if not part or part.isdigit():
            return False
        if not all(issubclass(c, nn.Module) and _absent_on_class(c, part) for c in self.classes) \
                or not self._own_classes():
            return False
        dicts = self._dicts
        if any(map(operator.contains, dicts, repeat(part))):
            return False
        for i, registry in enumerate(MODULE_REGISTRIES):
            if i == len(self._registries):
                self._registries.append(_str_keys(map(registry, dicts)))
            keys = self._registries[i]
            if part in keys if keys is not None and type(part) is str \
                    else any(map(operator.contains, map(registry, dicts), repeat(part))):
                return False
        return True

    def _own_classes(self) -> bool:
        """Every object is of its own ``__class__`` (read once; then each ``__dict__``)."""
        if self._plain is None:
            objs = self.objs
            self._plain = not any(o.__class__ is not type(o) for o in objs)
            if self._plain:
                self._dicts = [o.__dict__ for o in objs]
        return self._plain


def _str_keys(registries: Iterable[Any]) -> set[str] | None:
    """The union of ``registries``' keys where each is a ``str`` (None where one is not): a
    ``str`` name is in some registry exactly when it is in the union, since among ``str`` s
    (no subclass) equality is the strings' and the hash agrees with it, in a dict as in a
    set; so :meth:`ModuleOwners.absent` asks it once in place of a sweep per name."""
    keys = set().union(*filter(None, registries))
    return keys if all(type(k) is str for k in keys) else None


#: an ``nn.Module``'s registries in the order :func:`step_into` reads them (its ``__dict__``
#: last); every column read of a module hop follows this order
MODULE_REGISTRIES = tuple(map(operator.itemgetter, ("_modules", "_parameters", "_buffers")))


def step_into(obj: Any, part: str) -> Any:
    """One hop of a dotted path: a submodule, parameter, buffer, attribute, item or element."""
    if isinstance(obj, nn.Module):
        d = obj.__dict__
        registry = d["_modules"]  # then parameters, buffers and the instance dict, in order
        if part in registry:
            return registry[part]
        registry = d["_parameters"]
        if part in registry:
            return registry[part]
        registry = d["_buffers"]
        if part in registry:
            return registry[part]
        if part in d:
            return d[part]
        if not part.isdigit() and obj.__class__ is type(obj) \
                and _absent_on_class(type(obj), part):
            return MISSING  # what getattr would say, without raising and catching
    if part.isdigit():
        if isinstance(obj, Mapping):
            return obj.get(part, obj.get(int(part), MISSING))
        if isinstance(obj, (Sequence, nn.ModuleList, nn.Sequential)) and not isinstance(obj, str):
            idx = int(part)
            return obj[idx] if idx < len(obj) else MISSING
        if isinstance(obj, nn.Module):
            return obj._modules.get(part, MISSING)
        return MISSING
    if isinstance(obj, Mapping) and part in obj:
        return obj[part]
    return getattr(obj, part, MISSING)


def holder_dict(parent: Any, key: str) -> tuple[Any, Any] | None:
    """The dict that :func:`get_path` reads ``parent.key`` from, and the key, if there is one.

    None for list and tuple items, properties and ``__slots__``: places without a dict entry.
    """
    if isinstance(parent, nn.Module):
        d = parent.__dict__
        for registry in ("_modules", "_parameters", "_buffers"):
            if key in d[registry]:
                return d[registry], key
        if key in d:
            return d, key
        return None
    if isinstance(parent, dict) and key in parent:
        return parent, key
    if key.isdigit() and isinstance(parent, (list, tuple)):
        return None
    d = getattr(parent, "__dict__", None)
    if isinstance(d, dict) and key in d and not isinstance(getattr(type(parent), key, None),
                                                           property):
        return d, key
    return None


def _is_dunder(part: str) -> bool:
    return part.startswith("__") and part.endswith("__")


def get_path(root: Any, path: str) -> Any:
    """The object at ``path`` from ``root``, or :data:`MISSING`.

    Dunder segments (``__class__``, ``__globals__``) never resolve: a path from an untrusted
    spec cannot reach Python internals.
    """
    parts = _split(path)
    if parts is None:
        return MISSING
    obj = root
    for part in parts:
        obj = step_into(obj, part)
        if obj is MISSING:
            return MISSING
    return obj


@functools.lru_cache(maxsize=1 << 18)
def _split(path: str) -> tuple[str, ...] | None:
    """A path's parts (cached: compile reads each path several times); None with a dunder."""
    parts = tuple(path.split(".")) if path else ()
    return None if any(_is_dunder(p) for p in parts) else parts


def class_names(obj: Any) -> set[str]:
    """Short and qualified names of every class in ``type(obj)``'s MRO."""
    names: set[str] = set()
    for cls in type(obj).__mro__:
        names.add(cls.__name__)
        names.add(f"{cls.__module__}.{cls.__qualname__}")
    return names


def matches_class(obj: Any, wanted: Sequence[str]) -> bool:
    """True if any class in ``obj``'s MRO is named (short or qualified) in ``wanted``."""
    return bool(class_names(obj) & set(wanted))


def slot_of(owner: Any, name: str) -> Slot:
    """Where ``owner.name`` lives (:class:`Slot`); an item of a tuple is ``Slot.ELEMENT``, bound
    only by putting the whole tuple back."""
    if isinstance(owner, nn.Module):
        if name in owner._parameters:
            return Slot.PARAMETER
        if name in owner._buffers:
            return Slot.BUFFER
        if name not in owner._modules and name not in owner.__dict__ \
                and owner.__class__ is type(owner) and _absent_on_class(type(owner), name):
            return Slot.MISSING  # what hasattr would say, without raising and catching
    if isinstance(owner, Mapping):
        return Slot.ATTRIBUTE if name in owner else Slot.MISSING
    if isinstance(owner, tuple):  # an item of an immutable container
        return Slot.ELEMENT if name.isdigit() and int(name) < len(owner) else Slot.MISSING
    return Slot.ATTRIBUTE if hasattr(owner, name) else Slot.MISSING


def set_slot(owner: Any, name: str, value: Any, slot: str, persistent: bool = False) -> None:
    """Bind ``owner.name = value`` in ``slot`` (parameter, buffer or attribute).

    Removes ``name`` from the other slots first, so a module never holds it twice. Works on
    frozen dataclasses and ``__slots__`` objects through ``object.__setattr__``. Dunder names
    are refused (``ValueError``); specs are checked earlier (``DG015 unsafe-name``).
    """
    if _is_dunder(name):
        raise ValueError(f"refusing to bind the dunder {name!r}")
    if isinstance(owner, nn.Module):
        owner._parameters.pop(name, None)
        owner._buffers.pop(name, None)
        owner._non_persistent_buffers_set.discard(name)
        owner.__dict__.pop(name, None)
        if slot == "parameter":
            if not isinstance(value, nn.Parameter):
                raise TypeError(f"{name}: a parameter slot needs an nn.Parameter")
            owner._parameters[name] = value
        elif slot == "buffer":
            owner._buffers[name] = value
            if not persistent:
                owner._non_persistent_buffers_set.add(name)
        else:
            owner.__dict__[name] = value
        return
    if slot in ("parameter", "buffer"):
        raise TypeError(f"{type(owner).__name__} is not an nn.Module; it cannot hold a {slot}")
    if isinstance(owner, dict):
        owner[name] = value
    elif dataclasses.is_dataclass(owner) or hasattr(type(owner), "__slots__"):
        object.__setattr__(owner, name, value)
    else:
        try:
            setattr(owner, name, value)
        except AttributeError:
            object.__setattr__(owner, name, value)

