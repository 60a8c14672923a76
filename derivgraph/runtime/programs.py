"""What runs: the generated reload pass, its partial passes, and the functions ``run()`` and
``refill()`` call, all compiled into one namespace (:class:`~derivgraph.compiler.codegen.Bindings`).

Every step of a run is generated code, including the ones outside the pass (folds, constants,
scalars, the holder rebind): they are calls of the plan's helpers, bound as globals.
:meth:`Programs.source` prints exactly the text that runs.
"""

from __future__ import annotations

import fnmatch
import types
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import torch

from derivgraph._enum import StrEnum
from derivgraph.compiler.codegen import (
    Bindings,
    Constant,
    Flat,
    Helper,
    OutView,
    Program,
    RowsOf,
    Stage,
    TensorList,
    build_program,
    compile_function,
    literal,
    view_source,
)
from derivgraph.compiler.ir import NodeKind
from derivgraph.compiler.lower import WRITES, Action, LoweredSteps, Step, select
from derivgraph.errors import PassFault
from derivgraph.ops import OPS
from derivgraph.runtime.entry import Entry, HeldRows, nbytes_of
from derivgraph.runtime.storage import BoundTensors
from derivgraph.spec.kinds import TensorKind

__all__ = ["HELPERS", "PassKind", "Programs"]

# the plan helpers generated entry functions call (bound as globals of the same name)
HELPERS = ("restore_storage", "apply_folds", "rewrite_stale_constants", "replay", "execute",
           "take_engine_values", "pass_for", "set_scalars", "rebind")


class PassKind(StrEnum):
    """Which entry function: what ``run()`` or ``refill()`` executes."""

    RUN = "run"
    REFILL = "refill"


class Programs:
    """The compiled pass, partial passes by node set, and entry functions by (kind, updated)."""

    def __init__(self, tensors: BoundTensors, entries: Mapping[str, Entry]):
        self.tensors = tensors
        self.entries = entries
        self.bindings = Bindings()
        self.helpers: dict[str, Callable[..., Any]] = {}
        self.lowered: list[Step] = []  # the steps installed (a compact lowering: rows left out)
        self.program: Program | None = None
        self._partial: dict[frozenset[str], Program] = {}
        self._entry: dict[tuple[PassKind, tuple[str, ...] | None, bool], Program] = {}
        self._by_name: dict[str, Program] = {}
        self._needed: dict[tuple[str, ...], frozenset[str]] = {}
        # groups of many small CPU tensors run over flat buffers (derivgraph.compiler.flat);
        # False: one torch._foreach_* call per operation (the reference)
        self.flat = True

    def install(self, steps: list[Step], *, group: bool = True) -> Program:
        """Bind a fresh namespace and compile the full pass over ``steps``."""
        b = self.bindings
        b.clear()
        b.helper("torch", torch)
        b.helper("ops", types.SimpleNamespace(**OPS))
        for name, fn in self.helpers.items():
            b.helper(name, fn)
        b.reserve(*PassKind)
        self.lowered = steps
        self._partial, self._entry, self._by_name, self._needed = {}, {}, {}, {}
        self.program = self._compile(steps, "reload_pass" if group else "reload_pass_ungrouped",
                                     group)
        return self.program

    @property
    def steps(self) -> list[Step]:
        """Every step of the installed pass, in topological order (a compact lowering's rows
        made on first read: :meth:`~derivgraph.compiler.lower.LoweredSteps.expanded`)."""
        return _expanded(self.lowered)

    def step_count(self) -> int:
        """``len(self.steps)``, without making a compact lowering's rows' steps."""
        return _count(self.lowered)

    def written(self) -> list[str]:
        """The targets of the ``OUT``/``COPY`` steps of :attr:`steps`, in its order."""
        return _written(self.lowered)

    def targets(self) -> Iterable[str]:
        """The target of every step of :attr:`steps` but the intermediates (``COMPUTE``),
        in no particular order (a compact lowering's rows read off their columns)."""
        steps = self.lowered
        if isinstance(steps, LoweredSteps):
            return steps.targets()
        return [s.target for s in steps if s.action is not Action.COMPUTE]

    def _compile(self, steps: list[Step], hint: str, group: bool = True) -> Program:
        prog = build_program(self.tensors, self.bindings, steps, self.bindings.fresh(hint),
                             group=group, flat=self.flat)
        self._by_name[prog.name] = prog
        return prog

    def partial(self, nodes: frozenset[str]) -> Program:
        """The pass over the steps that make ``nodes`` (compiled once per node set)."""
        prog = self._partial.get(nodes)
        if prog is None:
            prog = self._partial[nodes] = self._compile(select(self.lowered, nodes),
                                                        "partial_pass")
        return prog

    def needed(self, names: tuple[str, ...], sources: Iterable[str]) -> frozenset[str]:
        """The nodes a run with ``updated=names`` (exact, prefix or glob) recomputes."""
        cached = self._needed.get(names)
        if cached is not None:
            return cached
        hit = {s for s in sources for n in names
               if s == n or s.startswith(n + ".") or fnmatch.fnmatchcase(s, n)}
        graph = self.tensors.graph
        deps = graph.source_deps()
        dirty = {n for n, d in deps.items() if d & hit} if hit else set()
        # an intermediate a dirty step reads is not kept between runs: recompute it too, even
        # when no updated source feeds it (derived tensors and constants keep their values)
        nodes = graph.nodes
        stack = list(dirty)
        while stack:
            for ref in nodes[stack.pop()].inputs:
                if ref not in dirty and nodes[ref].kind is NodeKind.OP \
                        and ref not in self.tensors.constants:
                    dirty.add(ref)
                    stack.append(ref)
        needed = self._needed[names] = frozenset(dirty)
        return needed

    # ---- entry functions ---------------------------------------------------------------------
    def built_entry(self, kind: PassKind, updated: tuple[str, ...] | None,
                    launched: bool = False) -> Program | None:
        """The entry function :meth:`entry` built for this key already, else None (a caller
        gathers what a build needs only on a miss)."""
        return self._entry.get((kind, updated, launched))

    def entry(self, kind: PassKind, updated: tuple[str, ...] | None, needed: frozenset[str],
              folds: Sequence[Any], constants: bool, *, launched: bool = False) -> Program:
        """The function ``run(updated=...)`` (or ``refill()``) calls with its report;
        ``launched``: what a full run does after it replayed the captured pass."""
        key = (kind, updated, launched)
        prog = self._entry.get(key)
        if prog is None:
            prog = self._entry[key] = self._launched_function() if launched else \
                self._entry_function(kind, updated, needed, folds, constants)
        return prog

    def _launched_function(self) -> Program:
        body = ["# run() launched the captured pass (it writes startup storage only) before "
                "this, and found every source in place",
                "report.restored = restore_storage()"]
        if self.tensors.stages:
            body.append(f"set_scalars({literal(list(self.tensors.stages))}, report)  # NOT "
                        "refillable: a captured graph baked the old number")
        body.append("report.rebinds = rebind(report)  # holders the engine rebuilt")
        return compile_function(self.bindings, self.bindings.fresh("run_launched"),
                                [(line, ()) for line in body], params="report",
                                doc="plan.run() after the captured pass was launched")

    def _entry_function(self, kind: PassKind, updated: tuple[str, ...] | None,
                        needed: frozenset[str], folds: Sequence[Any], constants: bool) -> Program:
        names = None if updated is None else list(updated)
        body: list[str] = ["report.restored = restore_storage()"]
        for fold in folds:
            body.append(f"# fold {fold.id} = {fold.decl.formula} in place, once per load "
                        "(the only write to a source)")
        if folds:
            body.append(f"apply_folds({literal(names)}, report)")
        if kind is PassKind.REFILL:
            body += ["rest = take_engine_values(report)  # the engine's fresh values, copied in",
                     "if rest is None:",
                     f"    execute({self.program.name}, report)",
                     "elif rest:  # what the engine made no fresh value for",
                     "    execute(pass_for(rest), report)"]
        else:
            if constants:
                body.append("rewrite_stale_constants(report)  # after a refill kept engine values")
            if updated is None:
                body.append(f"replay({self.program.name}, report)  # the recording once captured")
            else:
                body.append(f"execute({self.partial(needed).name}, report)")
        scalars = [t for t in self.tensors.stages if updated is None or t in needed]
        if scalars:
            body.append(f"set_scalars({literal(scalars)}, report)  # NOT refillable: a captured "
                        "graph baked the old number")
        body.append("report.rebinds = rebind(report)  # holders the engine rebuilt")
        doc = f"plan.{kind}()" if updated is None else f"plan.run(updated={names!r})"
        name = str(kind) if updated is None else self.bindings.fresh(f"{kind}_updated")
        return compile_function(self.bindings, name, [(line, ()) for line in body],
                                params="report", doc=doc)

    # ---- running -----------------------------------------------------------------------------
    def execute(self, fn: Any, report: Any) -> None:
        """Run one generated pass; a failure becomes a :class:`PassFault` naming the node."""
        prog = self._by_name[fn.__name__]
        try:
            fn()
        except Exception as exc:  # re-raised as a PassFault that names the node
            raise self._fault(prog, exc) from exc
        self.count(prog, report)

    def count(self, prog: Program, report: Any) -> None:
        """Add what ``prog`` runs to ``report`` (counted once per program, then reused)."""
        counts = prog.counts
        if counts is None:
            steps = prog.steps
            written = _written(steps)
            entries = self.entries
            storage = entries.storage if type(entries) is HeldRows else \
                (lambda t: entries[t].storage)  # a held row's from its column: no entry made
            counts = prog.counts = (_count(steps), len(written),
                                    sum(map(nbytes_of, map(storage, written))))
        report.steps += counts[0]
        report.written += counts[1]
        report.bytes += counts[2]

    def fault(self, prog: Program, exc: Exception) -> PassFault:
        """``exc`` raised inside ``prog`` as a :class:`PassFault` naming the node and the
        derived tensors it feeds."""
        return self._fault(prog, exc)

    def _fed(self, node_id: str) -> list[str]:
        """The derived tensors an intermediate node feeds, through any chain of ops."""
        users = self.tensors.graph.ir.users
        seen, stack, out = {node_id}, [node_id], []
        while stack:
            for user in users.get(stack.pop(), []):
                if user not in seen:
                    seen.add(user)
                    (out if user in self.entries else stack).append(user)
        return sorted(out)

    def _fault(self, prog: Program, exc: Exception) -> PassFault:
        tb = exc.__traceback__
        nodes: tuple[str, ...] = ()
        filename = prog.fn.__code__.co_filename
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == filename:
                nodes = prog.line_nodes.get(tb.tb_lineno, ())
            tb = tb.tb_next
        described, named = [], list(nodes)
        for n in nodes:
            entry = self.entries.get(n)
            if entry is not None:
                described.append(f"{n} (owner {entry.node.owner_path or '<model>'}, spec "
                                 f"{entry.node.bound.spec.name} at {entry.node.decl.location})")
            else:
                fed = self._fed(n)
                shown = [f"{u} (spec {self.entries[u].node.bound.spec.name} at "
                         f"{self.entries[u].node.decl.location})" for u in fed[:3]]
                described.append(f"{n} (feeding {', '.join(shown) or 'derived tensors'})")
                named += [u for u in fed if u not in named]
        where = "; ".join(described) or "an unknown step"
        return PassFault(f"the reload pass failed at {where}: {type(exc).__name__}: {exc}. "
                         "No source was written; run the pass again once the cause is fixed "
                         "(it rewrites every derived tensor from the sources)", named)

    # ---- printing ----------------------------------------------------------------------------
    def source(self, entry: Program, called: Sequence[Program]) -> str:
        """A header naming every bound global, then ``entry`` and the passes it calls."""
        lines = ["# Generated by derivgraph: the code run() and refill() execute.",
                 "# Before it, run() refuses engine-computed tensors it cannot make and checks "
                 "that no source changed.",
                 "# Bound at compile (re-resolved only when a holder is rebuilt):"]
        for key, name in list(self.bindings.names.items()):
            what = self._describe(key)
            if what is not None:
                lines.append(f"#   {name} = {what}")
        lines.append(f"#   {', '.join(self.helpers)}: the plan's helpers "
                     "(derivgraph.runtime.plan.Plan)")
        for key, e in self.entries.items():
            if e.node.input is None and e.node.kind is TensorKind.ENGINE:
                lines.append(f"# Not in the pass: {key} is engine-computed (refill() copies the "
                             "engine's fresh value; run() refuses it)")
        return "\n".join(lines) + "\n" + "\n".join(p.source for p in (entry, *called))

    def _describe(self, key: Any) -> str | None:
        tensors, graph = self.tensors, self.tensors.graph
        if isinstance(key, TensorList):
            refs = [i.target if isinstance(i, OutView) else f"{i.target} (staged)"
                    if isinstance(i, Stage) else f"{i.target}[{i.start}:{i.stop}]"
                    if isinstance(i, RowsOf) else
                    self.bindings.names[i] if graph.nodes[i.ref].kind is NodeKind.OP else i.ref
                    for i in key.items]
            return f"[{', '.join(refs)}]"
        if isinstance(key, OutView):
            return f"{key.target}.view({key.shape})  # out= through a reshape"
        if isinstance(key, Stage):
            return f"a tensor staging {key.target}  # a derived Python scalar"
        if isinstance(key, Flat):
            return _describe_flat(key)
        if isinstance(key, (Constant, Helper)):
            return None
        ref = key.ref
        entry = self.entries.get(ref)
        if entry is not None:
            node = entry.node
            return f"{ref}  # {node.kind}, {node.bound.spec.name} ({node.decl.location})"
        if ref in tensors.sources:
            return f"{ref}  # source"
        if ref in tensors.views:
            return f"{view_source(tensors, self.bindings, ref)}  # a view over a bound tensor"
        if graph.nodes[ref].kind is NodeKind.OP:
            return "a constant made at compile (no source feeds it)"
        return None


_FLAT_ROLES = {
    "span_out": "the memory holding the startup storage of",
    "span_in": "the memory holding the operands of",
    "at_out": "the element addresses (in its mem) of",
    "at_a": "the element addresses (in its mem) of the first operands of",
    "at_b": "the element addresses (in its mem, broadcast) of the second operands of",
    "buf": "a buffer of the elements of",
    "buf_b": "a buffer of the second operands' elements of",
    "held": "the storages addressed (kept alive by the pass) of"}


def _describe_flat(key: Flat) -> str:
    """A header line for a global of a group run over flat buffers."""
    read = f" (reading [{', '.join(key.operands)}])" if key.operands else ""
    return f"{_FLAT_ROLES[key.role]} [{', '.join(key.targets)}]{read}  # derivgraph.compiler.flat"


def _expanded(steps: list[Step]) -> list[Step]:
    """Every step of ``steps`` (a compact lowering's rows made)."""
    return steps.expanded() if isinstance(steps, LoweredSteps) else steps


def _count(steps: list[Step]) -> int:
    """How many steps ``steps`` runs, a compact lowering's rows included (none made)."""
    return steps.count() if isinstance(steps, LoweredSteps) else len(steps)


def _written(steps: list[Step]) -> list[str]:
    """The targets of the ``OUT``/``COPY`` steps of ``steps``, a compact lowering's rows
    included, in topological order."""
    if isinstance(steps, LoweredSteps):
        return steps.written()
    return [s.target for s in steps if s.action in WRITES]
