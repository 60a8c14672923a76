"""Errors that say where, which rule, and how to fix it.

Every problem derivgraph finds in a spec or while compiling a plan is a :class:`SpecIssue`:
the spec file and line, the node, the rule broken (a stable code), and the fix. Validation
collects every issue before raising one :class:`SpecValidationError`, so a user sees all of
them at once and no tensor has been touched.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from derivgraph._enum import StrEnum

__all__ = [
    "AdoptionError",
    "BaselineError",
    "CaptureAuditError",
    "ChangedFilesError",
    "CollectiveGroupError",
    "DerivgraphError",
    "EngineComputedError",
    "FoldReappliedError",
    "FormulaError",
    "IndexOutOfRange",
    "LimitError",
    "PackageNotFound",
    "PassFault",
    "RecaptureRequired",
    "Rule",
    "SourceChanged",
    "SourceLocation",
    "SpecError",
    "SpecIssue",
    "SpecValidationError",
    "StrictReloadError",
    "Unexpressible",
    "UsageError",
    "WorkerLost",
]


class Rule(StrEnum):
    """Stable rule codes used in error messages (and in tests).

    Each member's value is ``"DGnnn slug"``, so members compare equal to those strings and
    print as them; :attr:`code` and :attr:`slug` give the two halves.
    """

    SCHEMA = "DG001 schema"
    SYNTAX = "DG002 formula-syntax"
    UNKNOWN_NAME = "DG003 unknown-name"
    UNKNOWN_OP = "DG004 unknown-op"
    ARITY = "DG005 arity"
    CYCLE = "DG006 cycle"
    MISSING_SOURCE = "DG007 missing-source"
    MISMATCH = "DG008 declared-vs-inferred"
    DUPLICATE = "DG009 duplicate-name"
    ALIAS = "DG010 alias-conflict"
    ADOPTION = "DG011 adoption-mismatch"
    OWNER = "DG012 owner-kind"
    INFERENCE = "DG013 inference-failed"
    NO_MATCH = "DG014 target-not-found"
    UNSAFE_NAME = "DG015 unsafe-name"
    RESOURCE_LIMIT = "DG016 resource-limit"
    UNKNOWN_DEVICE = "DG017 unknown-device"
    PASS_FAULT = "DG030 pass-fault"
    SOURCE_CHANGED = "DG031 source-changed"
    COLLECTIVE_GROUP = "DG040 collective-group"
    INDEX_NOT_CONSTANT = "DG041 index-not-constant"
    INDEX_OUT_OF_RANGE = "DG042 index-out-of-range"
    CONTAINER_HOLDER = "DG043 container-holder"
    SPEC_VALUE = "DG055 spec-value"
    VLLM_DRIFT = "DG060 vllm-drift"
    CAPTURE_UNDECLARED = "DG061 capture-undeclared"
    RECAPTURE_REQUIRED = "DG062 recapture-required"
    SPEC_DROPPED = "DG063 spec-dropped"
    FOLD_DECLARATION = "DG080 fold-declaration"
    FOLD_REAPPLIED = "DG081 fold-reapplied"
    ENGINE_VALUE = "DG082 engine-computed"
    ENGINE_REFOLDED = "DG083 engine-refolded"

    @property
    def code(self) -> str:
        """The stable code, e.g. ``DG006``."""
        return self.value.split(" ", 1)[0]

    @property
    def slug(self) -> str:
        """The rule's short name, e.g. ``cycle``."""
        return self.value.split(" ", 1)[1]


@dataclass(frozen=True)
class SourceLocation:
    """Where a spec element was written: a file and a 1-based line (0 when unknown)."""

    file: str = "<python>"
    line: int = 0

    def __str__(self) -> str:
        return f"{self.file}:{self.line}" if self.line else self.file


@dataclass
class SpecIssue:
    """One broken rule: where, what, and the fix. ``rule`` is a :class:`Rule` (its
    ``"DGnnn slug"`` string is accepted and converted)."""

    rule: Rule
    message: str
    fix: str
    location: SourceLocation = field(default_factory=SourceLocation)
    node: str = ""

    def __post_init__(self) -> None:
        self.rule = Rule(self.rule)

    def __str__(self) -> str:
        node = f" [{self.node}]" if self.node else ""
        return f"{self.location}: {self.rule}{node}: {self.message}\n    fix: {self.fix}"


class DerivgraphError(Exception):
    """Base class of every error derivgraph raises on purpose."""


class SpecValidationError(DerivgraphError):
    """One or more spec issues; raised before any tensor is touched."""

    def __init__(self, issues: list[SpecIssue]):
        self.issues = list(issues)
        head = f"{len(self.issues)} spec problem(s):"
        super().__init__("\n".join([head, *(str(i) for i in self.issues)]))


class AdoptionError(DerivgraphError):
    """A tensor the engine made differs from what its spec computes.

    Either the spec's formula or the engine is wrong; derivgraph refuses to guess which.
    """

    def __init__(self, issues: list[SpecIssue]):
        self.issues = list(issues)
        super().__init__("\n".join(["adoption failed:", *(str(i) for i in self.issues)]))


class StrictReloadError(DerivgraphError):
    """A reload left graph-visible tensors moved or undeclared derived tensors behind."""

    def __init__(self, message: str, paths: list[str]):
        self.paths = list(paths)
        listing = "\n".join(f"  - {p}" for p in self.paths)
        super().__init__(f"{message}\n{listing}" if listing else message)


class SpecError(DerivgraphError, ValueError):
    """A spec, formula or input the compiler refuses; ``rule`` says which rule it breaks."""


class FormulaError(SpecError):
    """A formula that cannot be parsed or names an unknown op; ``rule`` is the error code."""

    def __init__(self, rule: Rule, message: str, fix: str):
        super().__init__(message)
        self.rule, self.message, self.fix = Rule(rule), message, fix


class LimitError(SpecError):
    """An input beyond a resource bound; ``rule`` is always ``DG016 resource-limit``."""

    def __init__(self, message: str, fix: str):
        super().__init__(message)
        self.rule, self.message, self.fix = Rule.RESOURCE_LIMIT, message, fix


class IndexOutOfRange(DerivgraphError, IndexError):
    """A constant index outside its dim, found on shapes (reported as ``DG042``)."""

    rule = Rule.INDEX_OUT_OF_RANGE


class CollectiveGroupError(SpecError):
    """A collective names a group that is unknown or not registered in a distributed run."""

    rule = Rule.COLLECTIVE_GROUP

    def __init__(self, message: str):
        super().__init__(f"{self.rule}: {message}")


class PassFault(DerivgraphError):
    """An op raised inside the reload pass; ``nodes`` are the derived/op nodes it was computing."""

    def __init__(self, message: str, nodes: list[str]):
        self.rule = Rule.PASS_FAULT
        self.nodes = list(nodes)
        super().__init__(f"{Rule.PASS_FAULT}: {message}")


class SourceChanged(DerivgraphError):
    """A source's shape or dtype changed on reload (strict mode refuses it)."""

    def __init__(self, message: str, paths: list[str]):
        self.rule = Rule.SOURCE_CHANGED
        self.paths = list(paths)
        super().__init__(f"{Rule.SOURCE_CHANGED}: {message}: {', '.join(paths)}\n    fix: "
                         "reload weights of the compiled shapes, or run(strict=False) to "
                         "re-allocate the affected derived tensors (graph recapture required)")


class EngineComputedError(DerivgraphError):
    """The pass was asked to compute a tensor only the engine's own code can produce."""

    def __init__(self, issues: list[SpecIssue]):
        self.issues = list(issues)
        super().__init__("\n".join(["engine-computed tensors:", *(str(i) for i in self.issues)]))


class FoldReappliedError(DerivgraphError):
    """A pass was asked to fold a source that was not loaded since its last fold (DG081), or
    the engine folded a freshly loaded source itself, so a declared fold would apply twice
    (DG083)."""

    def __init__(self, issues: list[SpecIssue]):
        self.issues = list(issues)
        super().__init__("\n".join(["fold refused:", *(str(i) for i in self.issues)]))


class CaptureAuditError(DerivgraphError):
    """Strict mode: a captured graph reads a long-lived tensor that no spec declares."""

    rule = Rule.CAPTURE_UNDECLARED

    def __init__(self, report: Any):
        self.report = report
        owners = ", ".join(f"{r.owner} ({', '.join(r.ops[:2])})" for r in report.undeclared[:8])
        super().__init__(
            f"{Rule.CAPTURE_UNDECLARED}: the captured graph reads {len(report.undeclared)} "
            f"undeclared long-lived tensor(s): {owners}\n    fix: declare each in a spec (a "
            f"derived tensor with an owner path), or move it onto the model as a parameter "
            f"or buffer the engine reloads")


class PackageNotFound(DerivgraphError, LookupError):
    """``--package NAME`` names nothing importable from this interpreter."""


class BaselineError(DerivgraphError, ValueError):
    """``--baseline FILE`` is not a static-audit JSON or SARIF report."""


class WorkerLost(DerivgraphError, RuntimeError):
    """A forked worker of the static audit died mid-phase (killed, or out of memory)."""


class ChangedFilesError(DerivgraphError, RuntimeError):
    """``--changed-since REF``: git could not list the files changed since REF."""


class UsageError(DerivgraphError):
    """A command-line mistake the command cannot run with: a reference that does not resolve,
    a factory that is no model factory, ``--device cuda`` without a GPU (exit 2, one line)."""


class Unexpressible(DerivgraphError):
    """A stored tensor our formula language cannot describe; ``op`` is an aten op to register."""

    def __init__(self, reason: str, op: str | None = None):
        super().__init__(reason)
        self.reason, self.op = reason, op


class RecaptureRequired(DerivgraphError):
    """Strict guard: a reload changed graph-visible tensors that no copy can bring back.

    ``slots`` names each one (path and what changed: layout, disappeared, new, a weight).
    """

    rule = Rule.RECAPTURE_REQUIRED

    def __init__(self, slots: list[str]):
        self.slots = list(slots)
        listing = "\n".join(f"  - {s}" for s in self.slots)
        super().__init__(
            f"{self.rule}: {len(self.slots)} graph-visible tensor slot(s) changed in a way the "
            f"guard cannot restore in place; captured graphs must be recaptured:\n{listing}\n"
            "    fix: recapture CUDA graphs (or run eager) after this reload, or declare these "
            "tensors in a spec (`derivgraph trace` drafts one) so they are recomputed in place")
