"""Compile once, stamp the rest: layers whose formulas resolve the same way share one template.

A bound spec's resolution is a function of the spec, the params it resolved, its derived nodes'
devices, and the model facts it read (:mod:`derivgraph.compiler.reads`: every path it walked,
each tensor's class and layout, every ``each()`` expansion, every config value, whether a path
is a derived tensor). The first layer of a kind is resolved with those reads recorded; it
becomes a *template* when it resolved without an issue. Another layer of the same spec, class,
params and devices whose probes give the same facts is *stamped*: the template's graph calls are
replayed with its own paths (sources, CSE-shared ops and derived inputs in the same order), so
its nodes, their numbering and the CSE sharing are exactly what resolving it would give.
Every stamped layer is one row of its template's
:class:`~derivgraph.compiler.instances.InstanceTable` (no per-layer record is kept); the later
phases read the tables (:mod:`derivgraph.compiler.layers`). When a kind's first template is
kept, its facts are proven on the later layers of its spec and class by column sweeps
(:mod:`derivgraph.compiler.stamp_columns`: they are model facts); a proven layer is stamped
without checking them again, any other is checked on its own. A run of proven rows with one
key whose replays would make every node they name is replayed by columns
(:meth:`Replay.run_rows <derivgraph.compiler.replay.Replay.run_rows>`), leaving what the
row-by-row replay leaves. ``DERIVGRAPH_STAMP=0`` (or
:func:`stamping` ``(False)``) turns it off.
"""

from __future__ import annotations

import contextlib
import os
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from operator import attrgetter, is_, is_not, itemgetter
from typing import Any

from derivgraph.compiler.bind import BoundSpec, BoundSpecs, paths_of, rows_of
from derivgraph.compiler.graph import (
    DerivedGraph,
    DerivedNode,
    HeldDerived,
    HeldRun,
    freeze,
    substitute,
)
from derivgraph.compiler.instances import InstanceTable
from derivgraph.compiler.reads import OpCall, Reads, probe_path
from derivgraph.compiler.replay import Replay, SourceStep, Twins
from derivgraph.compiler.stamp_columns import (
    ColumnProof,
    HopSweeps,
    Stacks,
    checks_of,
    column_provable,
    prove_columns,
)
from derivgraph.paths import MODULE_REGISTRIES

__all__ = ["InstanceTable", "Layers", "Stamper", "facts_hold", "stamping",
           "stamping_enabled"]

_ENABLED = [os.environ.get("DERIVGRAPH_STAMP", "1") != "0"]

_ID, _FIRST, _SECOND, _THIRD = attrgetter("id"), itemgetter(0), itemgetter(1), itemgetter(2)

#: Templates kept per (spec, class, params, devices): layers past this many kinds resolve alone.
MAX_TEMPLATES = 8


def stamping_enabled() -> bool:
    """Whether identical layers are stamped from a template (default; ``DERIVGRAPH_STAMP=0``
    turns it off)."""
    return _ENABLED[0]


@contextlib.contextmanager
def stamping(enabled: bool) -> Iterator[None]:
    """Compile with stamping on or off inside the block (equivalence tests, debugging)."""
    before, _ENABLED[0] = _ENABLED[0], enabled
    try:
        yield
    finally:
        _ENABLED[0] = before


@dataclass
class Template:
    """One layer's resolution: the facts it read, its graph calls, each node's input."""

    bound: BoundSpec
    reads: Reads
    inputs: list[str | None]
    ids: tuple[str, ...] = ()  # its own nodes: derived, then what its calls made (first use)
    keep: tuple[int, ...] = ()  # the positions of those first uses among every call's node
    program: Replay | None = None  # its calls compiled for replay (set when it is kept)
    table: InstanceTable | None = None  # its rows (set at its first stamp)
    # :attr:`keep` split: the derived positions kept, the slots of the calls' nodes kept
    keep_derived: list[int] = field(default_factory=list)
    keep_slots: list[int] = field(default_factory=list)

    def kept(self, program: Replay, derived: list[str]) -> None:
        """Set :attr:`ids` and :attr:`keep` from the template's ``derived`` tensors and the
        nodes its calls named (``program``'s :attr:`~Replay.made_slots` on its own layer)."""
        nodes = program.template_nodes(self.bound.module_path)
        raw = derived + [nodes[s] for s in program.made_slots]
        first: dict[str, int] = {}  # each node -> the position of its first use
        for i, node_id in enumerate(raw):
            first.setdefault(node_id, i)
        self.ids, self.keep = tuple(first), tuple(first.values())
        size = len(derived)
        self.keep_derived = [i for i in self.keep if i < size]
        self.keep_slots = [program.made_slots[i - size] for i in self.keep if i >= size]

    def own(self, derived: list[str], vals: list[str]) -> tuple[str, ...]:
        """A layer's own nodes aligned with :attr:`ids` (``vals``: its replay's slots)."""
        kept = derived if len(self.keep_derived) == len(derived) else \
            [derived[i] for i in self.keep_derived]
        return tuple(kept + [vals[s] for s in self.keep_slots])


#: a table whose rows are one run's, its rows list and their number then, and per leading
#: template position each row's derived tensor there (:attr:`Stamper.run_nodes`)
RunNodes = tuple[InstanceTable, Sequence[tuple[str, ...]], int,
                 list[list[DerivedNode] | HeldDerived]]

#: resolve(node, reads) -> the node's input id (None: no input, or an issue was reported)
Resolve = Callable[[DerivedNode, Reads | None], str | None]


class Layers(Sequence[tuple[BoundSpec, dict[str, Any], Any]]):
    """The layers a :class:`Stamper` resolves, in order, as columns: their bound specs
    (:class:`~derivgraph.compiler.bind.BoundSpecs` where the build made them so), params
    and nodes (each a list of derived nodes or a :class:`~derivgraph.compiler.graph.HeldRun`).
    Layer ``at`` is read as the tuple ``(bound, params, nodes)`` (its bound spec made then);
    a run of held rows is added whole (:meth:`extend`), no record made per row."""

    __slots__ = ("bounds", "nodes", "params")

    def __init__(self, bounds: Sequence[BoundSpec], params: list[dict[str, Any]],
                 nodes: list[Any]) -> None:
        self.bounds, self.params, self.nodes = bounds, params, nodes

    @classmethod
    def of(cls, layers: Sequence[tuple[BoundSpec, dict[str, Any], Any]]) -> Layers:
        """``layers`` as columns (``layers`` itself where it is held so)."""
        if type(layers) is Layers:
            return layers
        return cls(list(map(_FIRST, layers)), list(map(_SECOND, layers)),
                   list(map(_THIRD, layers)))

    def __len__(self) -> int:
        return len(self.params)

    def __getitem__(self, at: Any) -> Any:
        if type(at) is slice:
            return list(zip(self.bounds[at], self.params[at], self.nodes[at]))
        return self.bounds[at], self.params[at], self.nodes[at]

    def __iter__(self) -> Iterator[tuple[BoundSpec, dict[str, Any], Any]]:
        return zip(self.bounds, self.params, self.nodes)

    def append(self, bound: BoundSpec, params: dict[str, Any], nodes: Any) -> None:
        """Add one layer."""
        self.bounds.append(bound)  # type: ignore[attr-defined]
        self.params.append(params)
        self.nodes.append(nodes)

    def extend(self, bounds: Sequence[BoundSpec], params: list[dict[str, Any]],
               nodes: list[Any]) -> None:
        """Add a layer per row of ``bounds`` (with ``params`` and ``nodes`` row by row)."""
        if not len(bounds) == len(params) == len(nodes):
            raise ValueError("one params and one nodes per bound spec")
        self.bounds.extend(bounds)  # type: ignore[attr-defined]
        self.params += params
        self.nodes += nodes


def build_layers() -> Layers:
    """An empty :class:`Layers` whose bound specs are columns."""
    return Layers(BoundSpecs([], [], []), [], [])


class Stamper:
    """Resolves the bound specs of one graph, stamping layers that match a template."""

    def __init__(self, graph: DerivedGraph, resolve: Resolve,
                 layers: Sequence[tuple[BoundSpec, dict[str, Any], Any]] = (),
                 runs: dict[int, int] | None = None, sweeps: HopSweeps | None = None,
                 run_columns: dict[int, tuple[list[HeldDerived], list[list[str]]]]
                 | None = None):
        self.graph, self.resolve = graph, resolve
        self.sweeps = sweeps  # the build's first-hop sweeps, shared with its ParamStamper
        # a run's first layer -> its length: layers with one key (their spec, class, params
        # and nodes' decls and devices proven equal where they were made), computed once
        self.runs = runs or {}
        # a run's first layer -> per derived tensor of its rows, its node on every row and
        # their ids, where the caller made them so (the lists :meth:`_replay_run` makes)
        self.run_columns = run_columns or {}
        self._shared: list[Template] | None = None
        self._shared_until = -1
        # every layer of the graph, in resolution order (row ``at`` of :meth:`resolve_bound`):
        # a kind's first template proves the later layers of its kind by columns
        layers = Layers.of(layers)  # the layers' columns (read, never written here)
        self.stacks = Stacks(layers.bounds)
        self.params = layers.params
        self.nodes = layers.nodes
        self._done_until = -1  # the rows before it were replayed with their run's first
        # a proven row -> its template and its place among the template's proof's rows
        self.proven: dict[int, tuple[Template, ColumnProof, int]] = {}
        self.templates: dict[Any, list[Template]] = {}
        self.stamped = 0  # layers stamped (for the log and the tests)
        self.twins = Twins()  # a stamped op node -> the template's op it copies
        # template's own nodes -> its instance table (a row per stamped layer), first stamp first
        self.tables: dict[tuple[str, ...], InstanceTable] = {}
        # id(table) -> a table whose rows are all one run's (:meth:`_replay_run`), with its
        # rows list and length then, and per leading template position (the template's
        # derived tensors) each row's derived tensor there, by column
        self.run_nodes: dict[int, RunNodes] = {}

    def resolve_layers(self, layers: Sequence[tuple[BoundSpec, dict[str, Any],
                                                    list[DerivedNode]]]) -> None:
        """:meth:`resolve_bound` of each of ``layers`` (row ``at`` its ``at``-th), in order,
        not called on the rows a run's replay already resolved (on which it returns at
        once): after each call, the next row is the first neither resolved nor replayed."""
        at, size = 0, len(layers)
        while at < size:
            bound, params, nodes = layers[at]
            self.resolve_bound(bound, params, nodes, at)
            at = max(at + 1, self._done_until)

    def resolve_bound(self, bound: BoundSpec, params: dict[str, Any],
                      nodes: list[DerivedNode], at: int | None = None) -> None:
        """Give every node of ``bound`` (layer ``at`` of those the stamper was made with, if
        it is one) its input: from a matching template, or resolved."""
        if at is not None and at < self._done_until:  # replayed with its run (_replay_run)
            return
        if at is not None and at < self._shared_until:  # a run's later layer: its key
            kinds = self._shared
        else:
            kinds = self._kinds(bound, params, nodes, at) \
                if stamping_enabled() and bound.module_path else None
            if self.runs and at in self.runs:
                self._shared, self._shared_until = kinds, at + self.runs[at]
        if kinds and self.proven and at in self.runs \
                and self._replay_run(kinds[0], at, self.runs[at]):
            return
        if type(nodes) is HeldRun:  # resolved on its own: its nodes made
            assert at is not None  # a held row is one of the stamper's layers
            nodes = nodes.row(self.graph, at)
        if kinds and self.proven and at is not None:  # its kind's first template proved
            proof = self.proven.pop(at, None)  # it (a column proof)
            if proof is not None and proof[0] is kinds[0]:
                self._replay(proof[0], bound, nodes, proof[1].objects(proof[2]))
                self.stamped += 1
                return
        for template in kinds or ():
            objects = _matches(self.graph, template, bound, params)
            if objects is not None:
                self._replay(template, bound, nodes, objects)
                self.stamped += 1
                return
        if kinds is None or len(kinds) >= MAX_TEMPLATES:
            for node in nodes:
                self.resolve(node, None)
            return
        reads, issues = Reads(), len(self.graph.issues)
        inputs = [self.resolve(node, reads) for node in nodes]
        if reads.keyable and len(self.graph.issues) == issues and _replayable(bound, reads):
            derived = [n.id for n in nodes]
            template = Template(bound, reads, inputs)
            template.program = Replay(bound.relative, reads.calls, inputs, _layouts(reads),
                                      tuple(derived))
            template.kept(template.program, derived)
            kinds.append(template)
            if len(kinds) == 1 and at is not None and column_provable(reads, True):
                self._prove(template, at)

    def _prove(self, template: Template, at: int) -> None:
        """Prove ``template``'s facts on the later layers of its spec and class by columns
        (:func:`~derivgraph.compiler.stamp_columns.prove_rows`: they are model facts, and no
        derived tensor is added while layers are resolved); a proven layer of its kind is
        stamped without :func:`facts_hold`."""
        rows = self.stacks.later(at)
        proof = prove_columns(self.graph, template.reads,
                              rows_of(self.stacks.bounds, rows),
                              list(map(self.params.__getitem__, rows)), self.sweeps)
        self.proven.update(zip(map(rows.__getitem__, proof.rows),
                               zip(repeat(template), repeat(proof), range(len(proof.rows)))))

    def _kinds(self, bound: BoundSpec, params: dict[str, Any],
               nodes: list[DerivedNode] | HeldRun, at: int | None = None,
               ) -> list[Template] | None:
        """The templates to try on ``bound``, selected by spec, class, params, and each
        node's decl and device (None when a param cannot be keyed: that layer resolves
        alone); ``nodes`` a held run's (``at`` the row) read off its columns."""
        try:  # the key hashed once, by the lookup
            return self.templates.setdefault(
                (id(bound.spec), type(bound.module), freeze(params),
                 nodes.key(at) if type(nodes) is HeldRun else  # type: ignore[arg-type]
                 tuple([(id(n.decl), n.device) for n in nodes])), [])
        except TypeError:
            return None

    def _replay_run(self, template: Template, at: int, size: int) -> bool:
        """Replay ``template`` on rows ``at .. at + size - 1`` (a run: one key) by columns
        (:meth:`Replay.run_rows <derivgraph.compiler.replay.Replay.run_rows>`), leaving what
        :meth:`_replay` of each row in turn leaves, when ``template`` proved every one of
        them by columns and every node their replays name is new. False (nothing done)
        else."""
        program = template.program
        assert program is not None  # set when the template was kept
        rows = range(at, at + size)
        proofs = list(map(self.proven.get, rows))
        nodes = self.nodes[at:at + size]
        width = len(program.inputs)
        if not all(map(is_not, proofs, repeat(None))) \
                or not all(map(is_, map(_FIRST, proofs), repeat(template))) \
                or not all(map(is_, map(_SECOND, proofs), repeat(proofs[0][1]))) \
                or not _one_length(nodes) \
                or len(nodes[0]) != width:
            return False
        paths = paths_of(self.stacks.bounds)[at:at + size]
        start = self.graph.op_count()
        made = program.made()  # the inputs its nodes are: set with their users, by column
        at_inputs = [i for i, slot in enumerate(program.inputs) if slot is not None]
        placed = [i for i in at_inputs if program.inputs[i] in made]
        objects = proofs[0][1].columns([p[2] for p in proofs])
        held = self.run_columns.get(at)
        if held is None:
            if type(nodes[0]) is HeldRun:  # its columns are not the caller's: row by row
                return False
            columns = list(map(list, zip(*nodes)))  # each derived tensor on every row
            derived = [list(map(_ID, column)) for column in columns]
        else:  # the same lists, as the caller made the run's nodes
            columns, derived = held
        cols = program.run_rows(self.graph, paths, objects, self.twins,
                                [(program.inputs[i], columns[i], derived[i]) for i in placed])
        if cols is None:
            return False
        deque(map(self.proven.__delitem__, rows), maxlen=0)  # one C-level sweep
        rest = [i for i in at_inputs if program.inputs[i] not in made]
        if rest:  # inputs that are nodes no row makes (the template's constants)
            self.graph.place_column_inputs([columns[i] for i in rest],
                                           [derived[i] for i in rest],
                                           [cols[program.inputs[i]] for i in rest])
        kept = [derived[i] for i in template.keep_derived] + \
            [cols[s] for s in template.keep_slots]
        table = self._table(template)
        first = not table.rows
        ops = len(program.op_slots)
        table.add_columns(kept, paths, list(range(start, start + size * ops, ops)) if ops
                          else [start] * size)  # no row made
        if first:  # the table's rows are the run's: its derived tensors, by column
            self.run_nodes[id(table)] = (table, table.rows, len(table.rows),
                                         [columns[i] for i in template.keep_derived])
        self.stamped += size
        self._done_until = at + size
        return True

    def _table(self, template: Template) -> InstanceTable:
        """``template``'s instance table (made at its first stamp)."""
        table = template.table
        if table is None:
            table = self.tables.get(template.ids)
            if table is None:
                table = self.tables[template.ids] = InstanceTable(
                    template.ids, base=template.bound.module_path,
                    layouts=_row_layouts(template))
            template.table = table
        return table

    def _replay(self, template: Template, bound: BoundSpec, nodes: list[DerivedNode],
                objects: dict[tuple[str, ...], Any]) -> None:
        program = template.program
        assert program is not None  # set when the template was kept
        graph = self.graph
        found: list[str] = []
        derived = [n.id for n in nodes]
        start = graph.op_count()  # the row's record: its ops are numbered after this
        read: list[str] = []  # sources whose proven layout it did not take
        vals = program.run(graph, bound.module_path, bound.module, objects, self.twins,
                           derived, found, read)
        graph.place_inputs([(node, vals[slot]) for node, slot
                            in zip(nodes, program.inputs, strict=True) if slot is not None])
        if found:  # what the replay named and did not make: its own derived tensors (a
            # source call naming one), or another's node (then both rows are open)
            graph.touched.update([n for n in found if n not in derived])
        table = template.table or self._table(template)
        table.add_row(template.own(derived, vals), bound.module_path, start)
        if read:  # the record's layouts do not hold for this row: every row's are read
            table.layouts_hold = False


def _matches(graph: DerivedGraph, template: Template, bound: BoundSpec,
             params: dict[str, Any]) -> dict[tuple[str, ...], Any] | None:
    """The objects the path probes found on ``bound`` when every probe of ``template`` gives
    the same fact there; None at the first difference."""
    return facts_hold(graph, template.reads, bound, params)


def facts_hold(graph: DerivedGraph, reads: Reads, bound: BoundSpec,
               params: dict[str, Any]) -> dict[tuple[str, ...], Any] | None:
    """The objects the path probes found on ``bound`` when every probe of ``reads`` gives the
    same fact there; None at the first difference. The probes run in the order they were
    read, each one as its :class:`~derivgraph.compiler.stamp_columns.Check` (compiled once per
    ``reads``) runs it."""
    checks = reads.checks
    if checks is None:
        checks = checks_of(reads, type(bound.module))
    objects: dict[tuple[str, ...], Any] = {}
    module, derived, module_path = bound.module, graph.derived_ids, bound.module_path
    for check in checks:
        if check.part is not None and type(module) is check.cls:
            # probe_path's first hop from an nn.Module, read from its registries in
            # paths.step_into's order, the fact's layout compared field by field
            part, found, attrs = check.part, None, module.__dict__
            for registry in MODULE_REGISTRIES:
                held = registry(attrs)
                if part in held:
                    found = held[part]
                    break
            if found is not None:  # reads.layout's fields, each compared as it reads it
                cls, shape, stride, dtype, device = check.layout
                # torch.Size and stride() are tuples: equal to reads.layout's copies of them
                if type(found) is cls and found.shape == shape \
                        and found.stride() == stride and found.dtype == dtype \
                        and found.device == device:
                    objects[check.args[0]] = found
                    continue
        elif check.rel is not None:  # probe_derived: is the path a derived tensor
            path = module_path + check.suffix if module_path else check.rel  # bound.qualify
            if (path in derived) is check.fact:
                continue
            return None
        got, obj = check.probe(graph, bound, params, *check.args)
        if got != check.fact:
            return None
        if check.probe is probe_path:
            objects[check.args[0]] = obj
    return objects


def _layouts(reads: Reads) -> dict[tuple[str, ...], tuple[Any, ...]]:
    """The layout each path probe proved of the tensor at its whole path (the fact
    ``("tensor", len(parts), layout)``), by the path's parts."""
    return {args[0]: fact[2] for (probe, args), fact in reads.facts.items()
            if probe is probe_path and isinstance(fact, tuple) and fact[0] == "tensor"
            and fact[1] == len(args[0])}


def _row_layouts(template: Template) -> dict[int, tuple[Any, ...]]:
    """Per position of ``template``'s own sources that its replay makes with the layout its
    probes proved: that (shape, stride, dtype, device), the same in every stamped row."""
    assert template.program is not None  # set when the template was kept
    where = {node_id: i for i, node_id in enumerate(template.ids)}
    found: dict[int, tuple[Any, ...]] = {}
    for step in template.program.steps:
        if type(step) is SourceStep and step.layout is not None:
            at = where.get(template.bound.qualify(step.rel))
            if at is not None:
                found[at] = step.layout[1:]
    return found


def _replayable(bound: BoundSpec, reads: Reads) -> bool:
    """Every node a call refers to is the layer's own (renamable) or made by an earlier call."""
    made: set[str] = set()
    for call in reads.calls:
        if type(call) is OpCall:
            for ref in _refs(call.args) + _refs(call.kwargs):
                if ref not in made and bound.relative(ref) is None:
                    return False
            made.add(call.result)
    return True


def _refs(value: Any) -> list[str]:
    found: list[str] = []
    substitute(value, lambda node_id: found.append(node_id))
    return found


def _one_length(rows: list[Any]) -> bool:
    """Whether every row of ``rows`` has the first row's length: at once where each is the
    first row's very object (a held run's rows, :class:`HeldRun`: one length), else by one
    C-level sweep of the lengths."""
    first = rows[0]
    return all(map(is_, rows, repeat(first))) or all(map(len(first).__eq__, map(len, rows)))
