"""Capture-time pointer audit: what does a captured graph read, and who keeps it current?

While a graph is captured (a real ``torch.cuda.graph``, vLLM's CUDA-graph wrapper, or the
CPU recording of :mod:`derivgraph.runtime.replay`), a
:class:`~derivgraph.audit.runtime.reads.ReadRecorder`
records every storage the captured ops read. Each is classified:

* ``parameter`` — a registered parameter or buffer of the model (kept in place by the engine);
* ``declared`` — a derived tensor a compiled plan declares (``plan.declared()``: refilled);
* ``activation`` — made by an op inside the capture, or an input / engine pool the caller
  named (static inputs, KV caches, attention metadata);
* ``undeclared`` — anything else: a long-lived tensor no spec declares. After a reload it
  keeps its old value or is freed while the graph still reads it. Module-level dicts, kernel
  caches and plain attributes no spec covers land here.

Each read is reported with the ops that read it and a best-effort owner: a census path from
the model (:func:`derivgraph.audit.runtime.census.take_census`), else a module-level global holding
it, else ``?``. The audit only reads; in strict mode an undeclared read raises
:class:`CaptureAuditError` (DG061) when the capture ends.
"""

from __future__ import annotations

import enum
import logging
import sys
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from derivgraph.audit.runtime.census import take_census
from derivgraph.audit.runtime.reads import ReadRecorder, StorageKey, storage_key
from derivgraph.errors import CaptureAuditError
from derivgraph.tools.forward_capture import capture

__all__ = [
    "CaptureAudit", "CaptureAuditError", "CaptureAuditReport", "CapturedRead", "ReadClass",
    "audit_capture", "classify",
]

logger = logging.getLogger(__name__)

_UNREACHABLE = "?"


class ReadClass(enum.Enum):
    """Who keeps a captured read current across reloads."""

    PARAMETER = "parameter"
    DECLARED = "declared"
    ACTIVATION = "activation"
    UNDECLARED = "undeclared"


@dataclass
class CapturedRead:
    """One storage a captured graph reads."""

    read_class: ReadClass
    owner: str
    ops: list[str]
    shape: tuple[int, ...]
    dtype: str
    device: str

    def as_json(self) -> dict[str, Any]:
        return {"class": self.read_class.value, "owner": self.owner, "ops": self.ops,
                "shape": list(self.shape), "dtype": self.dtype, "device": self.device}


@dataclass
class CaptureAuditReport:
    """Every storage a capture read, classified; ``ok`` when none is undeclared."""

    reads: list[CapturedRead] = field(default_factory=list)
    ops: int = 0

    def of(self, read_class: ReadClass) -> list[CapturedRead]:
        return [r for r in self.reads if r.read_class is read_class]

    @property
    def undeclared(self) -> list[CapturedRead]:
        return self.of(ReadClass.UNDECLARED)

    def ok(self) -> bool:
        return not self.undeclared

    def counts(self) -> dict[str, int]:
        return {c.value: len(self.of(c)) for c in ReadClass}

    def as_json(self) -> dict[str, Any]:
        return {"ok": self.ok(), "ops": self.ops, "counts": self.counts(),
                "reads": [r.as_json() for r in self.reads]}

    def render(self, limit: int = 30, strict: bool = True) -> str:
        """Counts per class, the reads of each, and a verdict (FAIL only with ``strict``)."""
        counts = self.counts()
        lines = [f"capture audit: {self.ops} ops read {len(self.reads)} storages: "
                 + ", ".join(f"{v} {k}" for k, v in counts.items())]
        for c in (ReadClass.UNDECLARED, ReadClass.DECLARED, ReadClass.PARAMETER):
            rows = self.of(c)
            if not rows:
                continue
            lines.append(f"{c.value}:")
            for r in rows[:limit]:
                shape = ", ".join(map(str, r.shape))
                lines.append(f"  {r.owner:<48} {r.dtype}[{shape}] {r.device}  read by "
                             f"{', '.join(r.ops[:4])}")
            if len(rows) > limit:
                lines.append(f"  ... {len(rows) - limit} more")
        lines.append("PASS: every long-lived tensor the graph reads is a parameter, a buffer or "
                     "declared" if self.ok() else
                     f"{'FAIL' if strict else 'FINDINGS'}: {len(self.undeclared)} undeclared "
                     "long-lived tensor(s) read by the "
                     "captured graph: a reload leaves them stale or frees them; declare them in "
                     "a spec")
        return "\n".join(lines)


# ---- classification ---------------------------------------------------------------------------

def _keys(tensors: Iterable[Any]) -> dict[StorageKey, int]:
    out: dict[StorageKey, int] = {}
    for i, t in enumerate(tensors):
        if isinstance(t, torch.Tensor):
            key = storage_key(t)
            if key is not None:
                out.setdefault(key, i)
    return out


def _census_paths(models: Sequence[nn.Module]) -> dict[StorageKey, str]:
    out: dict[StorageKey, str] = {}
    for i, model in enumerate(models):
        prefix = f"model[{i}]." if len(models) > 1 else ""
        for path, entry in take_census(model, fingerprints=False, floats=False).tensors().items():
            key = storage_key(entry.value)
            if key is not None:
                out.setdefault(key, prefix + path)
    return out


def _global_owner(key: StorageKey) -> str | None:
    """A module-level global (or an item of one) holding a tensor of this storage."""
    with warnings.catch_warnings():  # deprecated module attributes warn when touched
        warnings.simplefilter("ignore")
        return _scan_globals(key)


def _scan_globals(key: StorageKey) -> str | None:
    for modname, module in list(sys.modules.items()):
        try:
            namespace = vars(module)
        except TypeError:
            continue
        for name, value in list(namespace.items()):
            if isinstance(value, torch.Tensor):
                if storage_key(value) == key:
                    return f"{modname}.{name}"
            elif type(value) is dict and len(value) <= 10_000:  # plain: no lazy mappings
                for k, v in list(value.items()):
                    if isinstance(v, torch.Tensor) and storage_key(v) == key:
                        return f"{modname}.{name}[{k!r}]"
            elif type(value) in (list, tuple) and len(value) <= 10_000:
                for j, v in enumerate(value):
                    if isinstance(v, torch.Tensor) and storage_key(v) == key:
                        return f"{modname}.{name}[{j}]"
    return None


def classify(recorder: ReadRecorder, models: nn.Module | Sequence[nn.Module],
             declared: Mapping[str, Any] | None = None, inputs: Iterable[Any] = (),
             pools: Iterable[Any] = ()) -> CaptureAuditReport:
    """Classify every storage ``recorder`` saw read (see the module docstring)."""
    models = [models] if isinstance(models, nn.Module) else list(models)
    report = CaptureAuditReport(ops=recorder.ops)
    if not recorder.reads:
        return report
    params: dict[StorageKey, str] = {}
    for model in models:
        named = [*model.named_parameters(remove_duplicate=False),
                 *model.named_buffers(remove_duplicate=False)]
        for path, t in named:
            key = storage_key(t) if t is not None else None
            if key is not None:
                params.setdefault(key, path)
    declared_keys: dict[StorageKey, str] = {}
    for path, t in (declared or {}).items():
        key = storage_key(t) if isinstance(t, torch.Tensor) else None
        if key is not None:
            declared_keys.setdefault(key, path)
    input_keys, pool_keys = _keys(inputs), _keys(pools)
    census: dict[StorageKey, str] | None = None
    for key, seen in recorder.reads.items():
        if seen.produced:
            cls, owner = ReadClass.ACTIVATION, "(made inside the capture)"
        elif key in input_keys:
            cls, owner = ReadClass.ACTIVATION, f"input[{input_keys[key]}]"
        elif key in pool_keys:
            cls, owner = ReadClass.ACTIVATION, f"pool[{pool_keys[key]}]"
        elif key in declared_keys:
            cls, owner = ReadClass.DECLARED, declared_keys[key]
        elif key in params:
            cls, owner = ReadClass.PARAMETER, params[key]
        else:
            if census is None:
                census = _census_paths(models)
            cls = ReadClass.UNDECLARED
            owner = census.get(key) or _global_owner(key) or _UNREACHABLE
        t = seen.tensor
        shape = tuple(t.shape) if t is not None else ()
        dtype = str(t.dtype).removeprefix("torch.") if t is not None else ""
        report.reads.append(CapturedRead(cls, owner, list(seen.ops), shape, dtype, key[0]))
    order = list(ReadClass)
    report.reads.sort(key=lambda r: (order.index(r.read_class), r.owner))
    return report


class CaptureAudit:
    """Record and classify what a capture inside this context reads.

    Usable around any capture::

        with CaptureAudit(model, declared=plan.declared(), inputs=[static_x], strict=True,
                          only_while_capturing=True) as audit:
            with torch.cuda.graph(g):
                static_y = model(static_x)
        audit.report.render()

    ``only_while_capturing`` ignores ops run outside a CUDA stream capture (warm-up runs,
    replays). ``log``: log a warning with the report when a read is undeclared. In strict
    mode, leaving the context raises :class:`CaptureAuditError` when the capture read an
    undeclared long-lived tensor (unless the block itself raised).
    """

    def __init__(self, models: nn.Module | Sequence[nn.Module], *,
                 declared: Mapping[str, Any] | None = None, inputs: Iterable[Any] = (),
                 pools: Iterable[Any] = (), strict: bool = False,
                 only_while_capturing: bool = False, log: bool = True):
        self.models = models
        self.log = log
        self.declared = declared
        self.inputs = list(inputs)
        self.pools = list(pools)
        self.strict = strict
        self.recorder = ReadRecorder(only_while_capturing=only_while_capturing)
        self.report = CaptureAuditReport()

    def __enter__(self) -> CaptureAudit:
        self.recorder.__enter__()
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self.recorder.__exit__(exc_type, exc, tb)
        if exc_type is not None:
            return
        self.report = classify(self.recorder, self.models, self.declared, self.inputs,
                               self.pools)
        self.recorder.reads.clear()  # drop the references to the model's tensors
        if not self.report.ok():
            if self.log:
                logger.warning("derivgraph: %s", self.report.render(limit=8))
            if self.strict:
                raise CaptureAuditError(self.report)


def audit_capture(model: nn.Module, static_input: torch.Tensor,
                  forward: Callable[[torch.Tensor], torch.Tensor] | None = None, *,
                  declared: Mapping[str, Any] | None = None,
                  strict: bool = False) -> CaptureAuditReport:
    """Capture ``forward(static_input)`` (default ``model``) and classify what it reads.

    On CUDA a real CUDA graph is captured (after warm-up runs, which are not recorded); on CPU
    the recorded forward of :mod:`derivgraph.runtime.replay`, after one warm-up run so that lazily
    built caches exist before the recording, as they would before a CUDA capture.
    """
    fn = forward if forward is not None else model
    cuda = static_input.device.type == "cuda"
    if not cuda:
        with torch.no_grad():
            fn(static_input)
    with CaptureAudit(model, declared=declared, inputs=[static_input], strict=strict,
                      only_while_capturing=cuda, log=False) as audit:
        capture(fn, static_input)
    return audit.report
