"""The executable vLLM audit: vLLM's own classes through a real reload judge the static audit.

For each case of :mod:`vllm_integration.builders`: build with seed A, take a census, reload with
seed B through vLLM's real layerwise path, take another census, build a cold start of B, and
diff the three (:func:`derivgraph.audit.runtime.diff.diff_censuses`). Every tensor a static finding
names on one of the case's classes (or their vLLM base classes) is then

* ``confirmed`` — observed moved, stale, unrefreshed or gone at that attribute, or vLLM's
  reload itself raised an error that names the attribute;
* ``refuted`` — kept in place and equal to the cold start;
* ``not_runnable`` — the case cannot run here, or the attribute was not built by the case.

Verdicts come as a mapping ``(class name, attribute name) -> Verdict``, the shape the static
audit's ``apply_verdicts(findings, verdicts)`` takes. Rows observed at runtime that no static
finding names are listed too (``static`` false): the static audit's misses.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import inspect
import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from derivgraph.audit.runtime.census import take_census
from derivgraph.audit.runtime.diff import DiffCategory, diff_censuses
from derivgraph.audit.static.finding import Verdict  # one vocabulary with the static audit
from derivgraph.audit.static.scan import collect_files, scan, scan_files
from derivgraph.audit.static.semantics import Store
from derivgraph.audit.table import text_table
from vllm_integration.blockers import Blocker
from vllm_integration.builders import NotRunnable
from vllm_integration.builders import cases as builder_cases
from vllm_integration.class_cases import class_cases

__all__ = ["AuditRow", "ExecutableAudit", "Verdict", "audit_cases", "run_audit",
           "static_findings"]

logger = logging.getLogger(__name__)


class Observed(str, enum.Enum):
    """What the reload did to the tensor at an attribute."""

    MOVED = "moved"
    STALE = "stale"
    UNREFRESHED = "unrefreshed"
    GONE = "gone"
    FRESH = "fresh"
    RELOAD_FAILED = "reload failed"  # vLLM's reload raised, naming this attribute
    ABSENT = "absent"  # the case built nothing at this attribute
    NOT_RUN = "not run"


_BROKEN = (Observed.MOVED, Observed.STALE, Observed.UNREFRESHED, Observed.GONE,
           Observed.RELOAD_FAILED)
#: the census diff's categories an attribute is looked up in, in the order that decides
_BROKEN_IN_ORDER = (DiffCategory.MOVED, DiffCategory.GONE, DiffCategory.STALE,
                    DiffCategory.UNREFRESHED)
_RANK = {Verdict.CONFIRMED: 2, Verdict.REFUTED: 1, Verdict.NOT_RUNNABLE: 0}


@dataclass(frozen=True)
class AuditRow:
    """One (case, class, attribute) and what the static audit and the reload said."""

    case: str
    cls: str
    attr: str
    static: bool
    observed: Observed
    verdict: Verdict | None
    paths: tuple[str, ...] = ()
    note: str = ""

    def as_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["observed"] = self.observed.value
        out["verdict"] = self.verdict.value if self.verdict else None
        out["paths"] = list(self.paths)
        return out


@dataclass
class ExecutableAudit:
    """Every row, the verdicts keyed as ``apply_verdicts`` wants, and each case's status."""

    rows: list[AuditRow] = field(default_factory=list)
    cases: dict[str, str] = field(default_factory=dict)  # case -> "ran" or the reason
    blockers: dict[str, Blocker] = field(default_factory=dict)  # case -> what vLLM raised
    #: case -> where its forward stopped, after filling what the findings name
    stops: dict[str, Blocker] = field(default_factory=dict)

    def verdicts(self) -> dict[tuple[str, str], Verdict]:
        """``(class name, attribute name) -> Verdict``; confirmed beats refuted beats not run."""
        out: dict[tuple[str, str], Verdict] = {}
        for row in self.rows:
            if row.verdict is None:
                continue
            key = (row.cls, row.attr)
            if key not in out or _RANK[row.verdict] > _RANK[out[key]]:
                out[key] = row.verdict
        return out

    def as_json(self) -> dict[str, Any]:
        return {"cases": self.cases, "rows": [r.as_json() for r in self.rows],
                "blockers": {c: asdict(b) | {"in_vllm": b.in_vllm}
                             for c, b in self.blockers.items()},
                "stops": {c: asdict(b) | {"in_vllm": b.in_vllm} for c, b in self.stops.items()},
                "verdicts": [{"class": c, "attribute": a, "verdict": v.value}
                             for (c, a), v in sorted(self.verdicts().items())]}

    def render(self) -> str:
        head = ("case", "class", "attribute", "static finding?", "observed", "verdict")
        lines = text_table(head, [(r.case, r.cls, r.attr, "yes" if r.static else "no",
                                   r.observed.value, r.verdict.value if r.verdict else "-")
                                  for r in self.rows], strip=True)
        counts = {v: sum(1 for x in self.verdicts().values() if x is v) for v in Verdict
                  if v is not Verdict.UNCHECKED}
        ran = sum(1 for s in self.cases.values() if s == "ran")
        lines.append(f"{len(self.cases)} case(s), {ran} ran; verdicts: "
                     + ", ".join(f"{v.value} {n}" for v, n in counts.items())
                     + f"; runtime findings no static finding names: "
                     f"{sum(1 for r in self.rows if not r.static)}")
        for case, status in self.cases.items():
            if status.startswith("reload failed"):
                lines.append(f"{case}: {status}")
            elif status != "ran":
                lines.append(f"not runnable: {case}: {status}")
        for case, stop in self.stops.items():
            lines.append(f"{case}: its forward stopped after the code under audit: {stop}")
        return "\n".join(lines)


class Unimported:
    """A class whose module raises on import here (e.g. a ROCm module asking for a GPU): its
    name and source file, found without running the module."""

    def __init__(self, qualified: str):
        import importlib.util

        module, _, self.__name__ = qualified.rpartition(".")
        try:
            spec = importlib.util.find_spec(module)
        except Exception:  # noqa: BLE001 - a parent package that raises on import
            spec = None
        self.file = spec.origin if spec is not None else None


def _classes(qualified: Iterable[str]) -> list[Any]:
    import importlib

    out: list[Any] = []
    for q in qualified:
        module, _, name = q.rpartition(".")
        try:
            out.append(getattr(importlib.import_module(module), name))
        except Exception as exc:  # noqa: BLE001 - the case reports why; the findings stay
            logger.info("audit vllm: cannot import %s (%s: %s)", q, type(exc).__name__, exc)
            out.append(Unimported(q))
    return out


def _vllm_mro(cls: Any) -> list[Any]:
    if not isinstance(cls, type):  # a module-level function or an unimported class
        return [cls]
    return [k for k in cls.__mro__ if k.__module__.startswith("vllm.")]


def _source(obj: Any) -> str | None:
    return obj.file if isinstance(obj, Unimported) else inspect.getsourcefile(obj)


def static_findings(classes: Sequence[Any]) -> list[Any]:
    """Static findings (``derivgraph.audit.static.scan``) on ``classes`` and their vLLM bases;
    a function in ``classes`` stands for the stores it makes outside any class (its findings'
    ``cls`` is set to the function's qualified name, the key ``apply_verdicts`` reads)."""
    names = {k.__name__ for c in classes if isinstance(c, (type, Unimported))
             for k in _vllm_mro(c)}
    functions = {f"{c.__module__}.{c.__qualname__}" for c in classes
                 if not isinstance(c, (type, Unimported))}
    files = sorted({_source(k) for c in classes for k in _vllm_mro(c)} - {None})
    report = scan_files(collect_files(files), [], jobs=1)
    local = [f for f in report.findings if f.cls in names]
    # a store reached only through a post-load root in another file (a function's stores, a
    # method called from another module) is found by the package-wide scan
    whole = _package_findings()
    seen = {(f.cls, f.attr, f.line) for f in local}
    return (local
            + [f for f in whole if f.cls in names and (f.cls, f.attr, f.line) not in seen
               and any(path.endswith("/" + f.file) for path in files)]
            + [dataclasses.replace(f, cls=f.qualname) for f in whole
               if f.cls is None and f.qualname in functions])


@functools.cache
def _package_findings() -> tuple[Any, ...]:
    return tuple(scan(package="vllm", specs=[]).findings)


def _resolve(model: Any, path: str) -> Any:
    """The object at a census path made of attribute names and indices (``layers.0.x``)."""
    obj = model
    for part in path.split("."):
        obj = obj[int(part)] if part.isdigit() else getattr(obj, part, None)
    return obj


def _held(model: Any, path: str, entry: Any, attr: str, holders: set[str]) -> bool:
    """Is ``path`` the attribute ``attr`` of a holder, or an entry of a container stored
    there (``x.weights[0]`` of a tuple at ``x.weights``)?"""
    if path == attr or path.endswith("." + attr):
        return entry.holder in holders
    owner, sep, _ = path.partition(f".{attr}[")
    return bool(sep) and type(_resolve(model, owner)).__name__ in holders


def _observe(diff: Any, census: Any, attr: str, holders: set[str],
             model: Any = None) -> tuple[Observed, tuple]:
    paths = tuple(sorted(p for p, e in census.index().items()
                         if _held(model, p, e, attr, holders)))
    if not paths:
        return Observed.ABSENT, ()
    for category in _BROKEN_IN_ORDER:
        for f in diff.by(category):
            if set(f.paths) & set(paths):
                return Observed(category.value), paths
    return Observed.FRESH, paths


def _holders(finding: Any, holders_of: dict[str, set[str]], layers: set[str]) -> set[str]:
    """The classes that may hold ``finding``'s store: the classes below the one making it,
    and for a layer-attribute store also the case's layers (the module the method was given)."""
    holders = holders_of.get(finding.cls, {finding.cls})
    return holders | layers if finding.store is Store.LAYER_ATTRIBUTE else holders


def _run_case(case: Any, audit: ExecutableAudit, seeds: tuple[int, int]) -> None:
    classes = _classes(case.classes)
    findings = static_findings(classes)
    try:
        model = case.build(seeds[0])
    except NotRunnable as exc:
        audit.cases[case.name] = exc.reason
        if exc.blocker is not None:
            audit.blockers[case.name] = exc.blocker
        for f in findings:
            audit.rows.append(AuditRow(case.name, f.cls, f.attr, True, Observed.NOT_RUN,
                                       Verdict.NOT_RUNNABLE, note=exc.reason))
        return
    startup = take_census(model)
    try:
        case.reload(model, seeds[1])
    except NotRunnable as exc:
        _reload_failed(case.name, findings, exc.reason, audit)
        if exc.blocker is not None:
            audit.blockers[case.name] = exc.blocker
        return
    after = take_census(model)
    cold = take_census(case.build(seeds[1]))
    diff = diff_censuses(startup, after, cold)
    audit.cases[case.name] = "ran"
    if "forward" in case.stops:
        audit.stops[case.name] = case.stops["forward"]
    # a finding on a base class is about every concrete class below it
    holders_of: dict[str, set[str]] = {}
    for c in classes:
        for k in _vllm_mro(c):
            holders_of.setdefault(k.__name__, set()).add(c.__name__)
    layers = {type(m).__name__ for m in case.layer_modules(model)}
    named: set[str] = set()
    for f in sorted(findings, key=lambda f: (f.cls, f.attr)):
        observed, paths = _observe(diff, after, f.attr, _holders(f, holders_of, layers), model)
        verdict = (Verdict.CONFIRMED if observed in _BROKEN else
                   Verdict.REFUTED if observed is Observed.FRESH else Verdict.NOT_RUNNABLE)
        note = "the case builds nothing at this attribute" if observed is Observed.ABSENT else ""
        audit.rows.append(AuditRow(case.name, f.cls, f.attr, True, observed, verdict, paths,
                                   note))
        named |= set(paths)
    misses: dict[tuple[str, str, str], list[str]] = {}  # (holder, attr, category) -> paths
    for category in _BROKEN_IN_ORDER:
        for f in diff.by(category):
            if set(f.paths) & named:
                continue
            attr = f.path.rsplit(".", 1)[-1]
            misses.setdefault((f.holder, attr, category), []).extend(f.paths)
            named |= set(f.paths)
    for (holder, attr, category), paths in misses.items():
        audit.rows.append(AuditRow(case.name, holder, attr, False, Observed(category), None,
                                   tuple(paths), f"{len(paths)} path(s)"))


def _reload_failed(case: str, findings: Sequence[Any], reason: str,
                   audit: ExecutableAudit) -> None:
    """The case built but vLLM's reload raised: a finding whose attribute the error names is
    confirmed (the store breaks the reload); the others were not observed."""
    audit.cases[case] = f"reload failed: {reason}"
    for f in sorted(findings, key=lambda f: (f.cls, f.attr)):
        named = f"'{f.attr}'" in reason
        audit.rows.append(AuditRow(
            case, f.cls, f.attr, True,
            Observed.RELOAD_FAILED if named else Observed.NOT_RUN,
            Verdict.CONFIRMED if named else Verdict.NOT_RUNNABLE, note=reason))


def audit_cases() -> list[Any]:
    """The cases of ``derivgraph audit vllm``: the quant-method cases of
    :mod:`vllm_integration.builders` and one per undeclared error class of the static audit."""
    return [*builder_cases(), *class_cases()]


def run_audit(cases: Sequence[Any] | None = None, *, names: Sequence[str] = (),
              seeds: tuple[int, int] = (0, 1),
              progress: Callable[[int, int | None, str], None] | None = None) -> ExecutableAudit:
    """Run every case (or those in ``names``) and judge the static findings of its classes;
    ``progress(done, total, name)`` is called before each case and once at the end."""
    chosen = list(cases if cases is not None else audit_cases())
    if names:
        chosen = [c for c in chosen if c.name in set(names)]
    audit = ExecutableAudit()
    for i, case in enumerate(chosen):
        logger.info("audit vllm: %s", case.name)
        if progress is not None:
            progress(i, len(chosen), case.name)
        _run_case(case, audit, seeds)
    if progress is not None:
        progress(len(chosen), len(chosen), "")
    return audit
