"""The static audit's records: the files it reads, the findings it makes and the report.

These types sit below every other static-audit module (the scan builds them, the verdicts of the
executable audit stamp them, the renderers print them) so that none of those import each other
for a type.
"""

from __future__ import annotations

import enum
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from derivgraph.audit.static.semantics import Severity, Store
from derivgraph.audit.static.sites import CATEGORIES, CategoryId
from derivgraph.spec.kinds import TensorKind

if TYPE_CHECKING:
    from derivgraph.audit.static.readers import ReaderKind

__all__ = ["BaselineState", "SourceFile", "StaticFinding", "StaticReport", "Verdict"]


class Verdict(enum.Enum):
    """What running the class said about a static finding."""

    CONFIRMED = "confirmed"
    REFUTED = "refuted"
    NOT_RUNNABLE = "not_runnable"
    UNCHECKED = "unchecked"


class BaselineState(enum.Enum):
    """SARIF ``baselineState`` of a finding against a saved baseline (:mod:`.baseline`)."""

    NEW = "new"
    UNCHANGED = "unchanged"


@dataclass(frozen=True)
class SourceFile:
    """A file to scan: where it is, how to show it, and its module name."""

    path: Path
    display: str
    module: str
    is_package: bool
    root: str = "SRCROOT"  # what display is relative to: SRCROOT (cwd), PKGROOT, "" (absolute)


@dataclass(frozen=True)
class StaticFinding:
    """One site of derived state in post-load code, declared by a spec or not."""

    file: str
    line: int
    col: int
    attr: str
    category: CategoryId
    reason: str
    cls: str | None
    function: str
    owner: str
    expr: str
    kind: TensorKind
    via: tuple[str, ...]
    declared: bool
    spec: str | None
    suggestion: str | None
    root: str = "SRCROOT"
    severity: Severity = Severity.WARNING
    store: Store | None = None  # where the site keeps its state
    consequence: str = ""  # what a reload does to it, in words
    fix: str = ""  # the fix in vLLM terms
    qualname: str = ""  # module-qualified class (or function) holding the code
    verdict: Verdict = Verdict.UNCHECKED  # set by the executable audit (:mod:`.verdicts`)
    reader: str | None = None  # the first read after load (:class:`.readers.Reader`, in words)
    reader_kind: ReaderKind | None = None  # how the first read after load reads it
    derives_from: str | None = None  # the weight the stored value is computed from
    evidence: str = ""  # why the severity is what it is (:mod:`.evidence`)
    baseline_state: BaselineState | None = None  # against ``--baseline`` (:mod:`.baseline`)
    forwards: str | None = None  # a forwarded rebuild: whose step rebuilt it (:mod:`.forwarded`)
    rule_round: int = 0  # the issue-21 round whose rule raised it (28: :mod:`.reload_skips`,
    # :mod:`.lazy_resets`); 0 for the rules before; the precision draw can leave them out

    @property
    def location(self) -> str:
        """``file:line``."""
        return f"{self.file}:{self.line}"

    @property
    def key(self) -> tuple[str, str]:
        """The stable key ``(qualified class name, attr)`` the executable audit's verdicts use."""
        return self.qualname or self.cls or self.function, self.attr

    @property
    def rule_id(self) -> str:
        """The stable rule id of the category (``DGS001``...)."""
        return CATEGORIES[self.category].rule_id

    @property
    def risk(self) -> str:
        """Why sites of this category are risky."""
        return CATEGORIES[self.category].risk

    def as_json(self) -> dict[str, Any]:
        """A JSON-ready dict (``file``, ``line``, ``attr``, ``reason``, ``category``, ...)."""
        out = asdict(self)
        out["via"] = list(self.via)
        out["severity"] = self.severity.value
        out["verdict"] = self.verdict.value
        out["baseline_state"] = self.baseline_state.value if self.baseline_state else None
        out["key"] = list(self.key)
        out["rule_id"] = self.rule_id
        out["risk"] = self.risk
        return out


@dataclass
class StaticReport:
    """All sites found, plus what was scanned."""

    findings: list[StaticFinding] = field(default_factory=list)
    files_scanned: int = 0
    files_audited: int = 0
    files_parsed: int = 0  # audited files that parsed (all files, when none had post-load code)
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0
    specs: int = 0
    roots: dict[str, str] = field(default_factory=dict)  # SARIF uriBaseId -> directory

    def undeclared(self) -> list[StaticFinding]:
        """Error and warning sites no spec declares, with a literal name: what ``--strict``
        fails on."""
        return [f for f in self.findings if not f.declared and f.severity is not Severity.INFO
                and f.category is not CategoryId.DYNAMIC_NAME]

    def dynamic(self) -> list[StaticFinding]:
        """Error and warning sites whose attribute name is computed (no spec can name them)."""
        return [f for f in self.findings if f.category is CategoryId.DYNAMIC_NAME
                and f.severity is not Severity.INFO]

    def handled(self) -> list[StaticFinding]:
        """Undeclared ``info`` sites: the engine's reload handles them."""
        return [f for f in self.findings if not f.declared and f.severity is Severity.INFO]

    def by_severity(self, declared: bool | None = False) -> Counter[str]:
        """Counts per severity (undeclared only by default; ``None`` for all)."""
        return Counter(f.severity.value for f in self.findings
                       if declared is None or f.declared == declared)

    @property
    def nothing_scanned(self) -> bool:
        """No file was read, or every file the audit had to parse failed to parse."""
        return self.files_scanned == 0 or self.files_parsed == 0

    def declared(self) -> list[StaticFinding]:
        """Sites a spec declares."""
        return [f for f in self.findings if f.declared]

    def by_category(self, declared: bool | None = False) -> Counter[str]:
        """Counts per category (undeclared only by default; ``None`` for all)."""
        return Counter(f.category for f in self.findings
                       if declared is None or f.declared == declared)

    def by_file(self, declared: bool | None = False) -> Counter[str]:
        """Counts per file (undeclared only by default; ``None`` for all)."""
        return Counter(f.file for f in self.findings
                       if declared is None or f.declared == declared)
