"""Compare censuses: what a reload moved, what it left stale, what appeared and vanished.

``diff_censuses(before, after, cold)`` takes the census of a model at startup (``before``,
what captured graphs read), after a reload (``after``) and, optionally, of a cold start of the
same weights (``cold``). Findings, one per tensor (its paths listed together):

* ``moved`` — a path of a startup tensor now holds another object (reallocated and re-bound),
  or the same object at another address or layout (a ``.data`` rebind, ``.set_()``);
* ``stale`` — the value at a path differs from the cold start (tensor fingerprints, Python
  floats compared exactly, NaN equal to NaN);
* ``gone`` — a startup path holds no tensor any more (a graph reads freed memory);
* ``new`` — a tensor or scalar the startup model did not have;
* ``recapture`` — a Python float that changed since startup: a graph captured at startup
  baked the old number, only a recapture makes it current;
* ``unrefreshed`` — without a cold start only (``model=`` given): a tensor kept in place whose
  value the reload did not change although every loaded tensor of its module changed (stale
  in place, by the heuristic of :mod:`derivgraph.audit.runtime.freshness`). A cold start replaces
  the
  heuristic with the exact ``stale`` check.

Each finding is classified against a plan's :class:`~derivgraph.audit.runtime.declared.DeclaredSet`
(declared or undeclared); without a plan nothing is declared.
"""

from __future__ import annotations

import fnmatch
import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import torch

from derivgraph._enum import StrEnum
from derivgraph.audit.runtime.census import Census, CensusEntry
from derivgraph.audit.runtime.declared import DeclaredSet
from derivgraph.audit.runtime.freshness import loaded_tensors, module_changes, unrefreshed

__all__ = ["CATEGORIES", "FAILING", "CensusDiff", "DiffCategory", "Finding", "diff_censuses"]


class DiffCategory(StrEnum):
    """What a reload did to one tensor (or Python scalar) a census saw (a closed set; the value
    is the report's word)."""

    MOVED = "moved"
    STALE = "stale"
    UNREFRESHED = "unrefreshed"
    GONE = "gone"
    NEW = "new"
    RECAPTURE = "recapture"


#: every category, in the reports' order
CATEGORIES = tuple(DiffCategory)
#: Categories that break a captured graph whether or not a spec declares the tensor.
FAILING = (DiffCategory.MOVED, DiffCategory.STALE, DiffCategory.UNREFRESHED, DiffCategory.GONE)


@dataclass(frozen=True)
class Finding:
    """One tensor (or scalar) a reload broke, at every path it was seen under."""

    category: DiffCategory
    path: str
    paths: tuple[str, ...]
    reason: str
    declared: bool
    holder: str = ""
    place: str = ""
    before: str | None = None
    after: str | None = None

    def as_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["paths"] = list(self.paths)
        return data

    def line(self) -> str:
        where = f" [{self.place} of {self.holder}]" if self.holder else ""
        cls = "declared" if self.declared else "UNDECLARED"
        more = f" (+{len(self.paths) - 1} alias path(s))" if len(self.paths) > 1 else ""
        return f"{self.category:<9} {cls:<10} {self.path}{more}{where}: {self.reason}"


class ByCategory:
    """``moved``, ``stale``, ``gone``, ``new``, ``recapture``: path lists from ``paths()``."""

    def paths(self, category: DiffCategory | str) -> list[str]:
        raise NotImplementedError

    moved = property(lambda self: self.paths(DiffCategory.MOVED), doc="Paths of moved findings.")
    stale = property(lambda self: self.paths(DiffCategory.STALE), doc="Paths of stale findings.")
    gone = property(lambda self: self.paths(DiffCategory.GONE), doc="Paths of gone findings.")
    new = property(lambda self: self.paths(DiffCategory.NEW), doc="Paths of new findings.")
    recapture = property(lambda self: self.paths(DiffCategory.RECAPTURE),
                         doc="Paths of Python floats that changed (graphs baked the old one).")
    unrefreshed = property(lambda self: self.paths(DiffCategory.UNREFRESHED),
                           doc="Paths left stale in place by the heuristic (no cold start).")


@dataclass
class CensusDiff(ByCategory):
    """All findings of one comparison, with the counts an oracle reports."""

    findings: list[Finding] = field(default_factory=list)
    tensors: int = 0
    changed: int = 0
    stale_checked: bool = False
    classified: bool = False
    heuristic: bool = False  # no cold start, but the unrefreshed heuristic ran

    def by(self, category: DiffCategory | str) -> list[Finding]:
        """The findings of ``category`` (a member or its word; an unknown word: ValueError)."""
        category = DiffCategory(category)
        return [f for f in self.findings if f.category is category]

    def paths(self, category: DiffCategory | str) -> list[str]:
        return [f.path for f in self.by(category)]

    def undeclared(self) -> list[str]:
        """Paths of findings (other than ``new``) that no spec declares, deduplicated."""
        out: list[str] = []
        for f in self.findings:
            if f.category is not DiffCategory.NEW and not f.declared and f.path not in out:
                out.append(f.path)
        return out

    def ok(self) -> bool:
        """Nothing moved, stale or gone, and nothing undeclared."""
        return not any(f.category in FAILING for f in self.findings) and not self.undeclared()

    def summary(self) -> str:
        counts = ", ".join(f"{c} {len(self.by(c))}" for c in CATEGORIES)
        stale = "" if self.stale_checked else (
            " (no cold start: stale values checked only by the unrefreshed heuristic)"
            if self.heuristic else " (stale not checked: no cold start)")
        return f"tensors changed {self.changed}/{self.tensors}: {counts}{stale}"

    def as_json(self) -> dict[str, Any]:
        return {
            "tensors": self.tensors,
            "changed": self.changed,
            **{c: self.paths(c) for c in CATEGORIES},
            "undeclared": self.undeclared(),
            "stale_checked": self.stale_checked,
            "unrefreshed_heuristic": self.heuristic,
            "ok": self.ok(),
            "findings": [f.as_json() for f in self.findings],
        }


# ---- comparison helpers -------------------------------------------------------------------------

def _same_number(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return bool(a == b)


def _move_reason(b: CensusEntry, a: CensusEntry) -> str | None:
    """Why the tensor at a path is no longer the startup one, or ``None`` if it is."""
    bi, ai = b.identity, a.identity
    assert bi is not None and ai is not None
    same_object = (a.value is b.value) if (a.value is not None and b.value is not None) \
        else ai.obj_id == bi.obj_id
    if not same_object:
        where = "at the same address" if ai.same_address(bi) else "at a new address"
        return f"replaced by another tensor {where}"
    if ai.data_ptr != bi.data_ptr or ai.storage_ptr != bi.storage_ptr:
        return "same object, new storage (a `.data` rebind or `.set_()`)"
    if ai.address() != bi.address():
        return "same object and storage, new layout (offset, shape, stride or dtype)"
    return None


def _sharers(census: Census) -> dict[int, list[str]]:
    out: dict[int, list[str]] = {}
    for e in census.tensors().values():
        if e.identity is not None and e.identity.storage_ptr:
            out.setdefault(e.identity.storage_ptr, []).append(e.path)
    return out


def _max_abs_diff(a: Any, b: Any) -> float | None:
    if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
        return None
    if a.shape != b.shape or a.device.type == "meta" or b.device.type == "meta":
        return None
    if a.numel() == 0 or a.numel() > 1 << 24:
        return None
    with torch.no_grad():
        x = a.detach().to(torch.float64)
        y = b.detach().to(device=a.device, dtype=torch.float64)
        d = torch.where(torch.isnan(x) & torch.isnan(y), torch.zeros_like(x), (x - y).abs())
        return float(torch.nan_to_num(d, nan=math.inf).max())


def _diff_note(value: Any, reference: Any) -> str:
    """`` (max |diff| x)`` for a finding whose fingerprints differ, never a bare 0: the
    reference may be the same tensor, changed in place since, or differ only bitwise."""
    if value is reference:
        return " (changed in place since the reference census: no max |diff|)"
    worst = _max_abs_diff(value, reference)
    if worst is None:
        return ""
    if worst == 0:
        return " (bitwise only: -0.0 vs 0.0 or NaN payloads)"
    return f" (max |diff| {worst:.6g})"


class _Ignore:
    def __init__(self, patterns: Sequence[str]):
        self.patterns = list(patterns)

    def keep(self, paths: Iterable[str]) -> list[str]:
        if not self.patterns:
            return list(paths)
        return [p for p in paths
                if not any(fnmatch.fnmatchcase(p, pat) for pat in self.patterns)]


# ---- the diff -----------------------------------------------------------------------------------

def _moved_and_gone(before: Census, after: Census, declared: DeclaredSet, ignore: _Ignore,
                    changed: set[str]) -> list[Finding]:
    findings: list[Finding] = []
    after_sharers = _sharers(after)
    for b in before.tensors().values():
        moved: list[str] = []
        gone: list[str] = []
        kept: list[str] = []
        reasons: list[str] = []
        new_objects: list[Any] = []
        last: CensusEntry | None = None
        for p in ignore.keep(b.paths()):
            a = after.get(p)
            if a is None or not a.is_tensor:
                gone.append(p)
                continue
            reason = _move_reason(b, a)
            if reason is None:
                kept.append(p)
                continue
            moved.append(p)
            new_objects.append(a.value)
            last = a
            if reason not in reasons:
                reasons.append(reason)
        if moved and last is not None:
            ident = last.identity
            assert ident is not None
            covered = declared.covers(moved, [b.value, *new_objects])
            reason = "; ".join(reasons)
            if "new storage" in reason:
                shared = [s for s in after_sharers.get(ident.storage_ptr, [])
                          if s not in b.paths()]
                if shared:
                    reason += f"; now shares storage with {', '.join(shared[:3])}"
                if covered:
                    reason += ("; a plan refill writes into the object's current storage and "
                               "cannot undo this: the engine must not rebind `.data`/`.set_()`")
            if kept:
                reason += f"; the startup tensor is still held at {kept[0]}"
                decl = declared.declared_path(kept)
                if decl is not None and not declared.declared_path(moved):
                    reason += " (declared there: make this holder read the declared tensor)"
            path = b.path if b.path in moved else moved[0]
            findings.append(Finding(
                DiffCategory.MOVED, path, (path, *[p for p in moved if p != path]), reason,
                covered,
                b.holder if path == b.path else last.holder,
                b.place if path == b.path else last.place,
                b.identity.describe() if b.identity else None, ident.describe()))
            changed.add(b.path)
        if gone:
            path = b.path if b.path in gone else gone[0]
            findings.append(Finding(
                DiffCategory.GONE, path, (path, *[p for p in gone if p != path]),
                "no tensor at this path any more; a graph captured at startup reads memory "
                "nothing holds", declared.covers(gone, [b.value]), b.holder, b.place,
                b.identity.describe() if b.identity else None, None))
            changed.add(b.path)
    return findings


def _stale(before: Census, after: Census, cold: Census, declared: DeclaredSet, ignore: _Ignore,
           changed: set[str]) -> list[Finding]:
    findings: list[Finding] = []
    for a in after.entries.values():
        stale: list[str] = []
        ref: CensusEntry | None = None
        for p in ignore.keep(a.paths()):
            c = cold.get(p)
            if c is None:
                continue
            if a.is_tensor and c.is_tensor:
                differs = a.fingerprint != c.fingerprint
            elif not a.is_tensor and not c.is_tensor:
                differs = not _same_number(a.value, c.value)
            else:
                differs = True
            if differs:
                stale.append(p)
                ref = ref or c
        if not stale or ref is None:
            continue
        if a.is_tensor and ref.is_tensor:
            assert a.identity is not None and ref.identity is not None
            if (a.identity.shape, a.identity.dtype) != (ref.identity.shape, ref.identity.dtype):
                reason = (f"differs from a cold start: {a.identity.dtype}{list(a.identity.shape)} "
                          f"vs {ref.identity.dtype}{list(ref.identity.shape)}")
            else:
                reason = ("value differs from a cold start of the same weights"
                          + _diff_note(a.value, ref.value))
            before_s, after_s = ref.identity.describe(), a.identity.describe()
        elif not a.is_tensor and not ref.is_tensor:
            reason = f"Python scalar {a.value!r} differs from the cold start's {ref.value!r}"
            before_s, after_s = repr(ref.value), repr(a.value)
        else:
            reason = "a tensor in one model and a Python scalar in the other"
            before_s = after_s = None
        path = a.path if a.path in stale else stale[0]
        findings.append(Finding(DiffCategory.STALE, path, (path, *[p for p in stale if p != path]),
                                reason, declared.covers(stale, [a.value] if a.is_tensor else []),
                                a.holder, a.place, before_s, after_s))
        for p in stale:
            b = before.get(p)
            if b is not None and b.is_tensor:
                changed.add(b.path)
    return findings


def _scalars_and_new(before: Census, after: Census, declared: DeclaredSet, ignore: _Ignore,
                     stale_paths: set[str]) -> list[Finding]:
    findings: list[Finding] = []
    for b in before.scalars().values():
        if not ignore.keep([b.path]):
            continue
        a = after.get(b.path)
        if a is None or a.is_tensor:
            findings.append(Finding(DiffCategory.GONE, b.path, (b.path,),
                                    "Python scalar no longer held",
                                    declared.covers([b.path]), b.holder, b.place,
                                    repr(b.value), None))
        elif not _same_number(a.value, b.value) and b.path not in stale_paths:
            findings.append(Finding(
                DiffCategory.RECAPTURE, b.path, (b.path,),
                f"Python scalar changed {b.value!r} -> {a.value!r}; a graph captured at startup "
                "baked the old number: recapture (no reload can refill a Python number)",
                declared.covers([b.path]), a.holder, a.place, repr(b.value), repr(a.value)))
    known = before.index()
    for a in after.entries.values():
        paths = ignore.keep(a.paths())
        if paths and not any(p in known for p in a.paths()):
            findings.append(Finding(
                DiffCategory.NEW, a.path, tuple(paths), "not held at startup"
                + ("" if a.is_tensor else f" (Python scalar {a.value!r})"),
                declared.covers(paths, [a.value] if a.is_tensor else []), a.holder, a.place,
                None, a.identity.describe() if a.identity else repr(a.value)))
    return findings


def _unrefreshed(before: Census, after: Census, model: Any, declared: DeclaredSet,
                 ignore: _Ignore, flagged: set[str], changed: set[str]) -> list[Finding]:
    loaded = loaded_tensors(model)
    loaded_ids = {id(t) for t in loaded.values()}

    def digests(census: Census) -> dict[str, Any]:
        out = {}
        for name in loaded:
            e = census.get(name)
            out[name] = e.fingerprint if e is not None and e.is_tensor else None
        return out

    changes = module_changes(digests(before), digests(after))
    unchanged = []
    for a in after.tensors().values():
        b = before.get(a.path)
        if (b is None or not b.is_tensor or id(a.value) in loaded_ids or a.path in flagged
                or b.value is not a.value or a.fingerprint is None
                or a.fingerprint != b.fingerprint or not ignore.keep([a.path])):
            continue
        unchanged.append((a.path, a.value))
    modules = [n for n, _ in model.named_modules()] if hasattr(model, "named_modules") else []
    findings = []
    for u in unrefreshed(unchanged, modules, changes):
        a = after.entries[u.path]
        findings.append(Finding(DiffCategory.UNREFRESHED, u.path, tuple(ignore.keep(a.paths())),
                                u.reason(), declared.covers(a.paths(), [a.value]), a.holder,
                                a.place,
                                a.identity.describe() if a.identity else None,
                                a.identity.describe() if a.identity else None))
        b = before.get(u.path)
        if b is not None:
            changed.add(b.path)
    return findings


def diff_censuses(before: Census, after: Census, cold: Census | None = None, *,
                  declared: DeclaredSet | None = None,
                  ignore: Sequence[str] = (), model: Any = None) -> CensusDiff:
    """Compare a startup census with one taken after a reload (and a cold start's).

    ``before`` and ``after`` must keep their tensors alive (``take_census`` does by default),
    so that object identity is trustworthy. ``cold``: a census of a cold start of the weights
    the reload loaded; without it nothing is checked for staleness. ``declared``: what a plan
    declares (see :meth:`DeclaredSet.from_plan`). ``ignore``: glob patterns of paths to skip
    (scratch buffers whose contents are meaningless, say ``*.workspace``). ``model``: the
    reloaded model; without ``cold`` it enables the ``unrefreshed`` heuristic (it needs the
    model's loaded tensors and module tree).
    """
    decl = declared if declared is not None else DeclaredSet.empty()
    skip = _Ignore(ignore)
    changed: set[str] = set()
    findings = _moved_and_gone(before, after, decl, skip, changed)
    stale_paths: set[str] = set()
    if cold is not None:
        stale = _stale(before, after, cold, decl, skip, changed)
        stale_paths = {p for f in stale for p in f.paths}
        findings += stale
    elif model is not None:
        flagged = {p for f in findings for p in f.paths}
        findings += _unrefreshed(before, after, model, decl, skip, flagged, changed)
    findings += _scalars_and_new(before, after, decl, skip, stale_paths)
    order = {c: i for i, c in enumerate(CATEGORIES)}
    findings.sort(key=lambda f: (order[f.category], f.path))
    return CensusDiff(findings, len(before.tensors()), len(changed), cold is not None,
                      declared is not None, cold is None and model is not None)
