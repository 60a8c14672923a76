"""Compile a model's derived tensors into a plan: allocate (or adopt) once, refill in place.

:func:`compile_plan` binds specs to a live model, builds and validates the DAG, checks every
tensor the engine already made against its formula, and only then allocates what is missing
and binds every tensor to its owner. It lowers the pass (:mod:`derivgraph.compiler.lower`), runs it
once
and checks it bit for bit against eager per-op evaluation (demoting grouped instructions if a
device ever disagrees). The result is a :class:`~derivgraph.runtime.plan.Plan`, whose ``run`` /
``refill`` is the reload pass.
"""

from __future__ import annotations

import gc
import logging
import math
import operator
from collections.abc import Iterable, Mapping, Sequence
from itertools import compress, filterfalse, repeat
from typing import Any, NamedTuple

import torch
from torch import nn

from derivgraph.addresses import read_addresses
from derivgraph.adoption import (
    AliasOf,
    Extra,
    PlannedById,
    ViewOf,
    adopt_or_allocate,
    allocate_column,
    allocate_like,
    filled_column,
    span_of,
)
from derivgraph.column_layout import ColumnLayouts, proven_layout
from derivgraph.compare import bits_equal
from derivgraph.compiler.bind import check_bindings, match_specs, specs_of
from derivgraph.compiler.build import build_graph
from derivgraph.compiler.checks import fault_issue, index_issues, view_issues
from derivgraph.compiler.columns import (
    ColumnValues,
    FilledColumns,
    admit_templates,
    derived_columns,
    evaluate_columns,
    fill_derived,
    row_values,
)
from derivgraph.compiler.fold import compile_folds
from derivgraph.compiler.graph import DerivedGraph
from derivgraph.compiler.instances import InstanceTable
from derivgraph.compiler.interpret import (
    EagerInterpreter,
    MetaInterpreter,
    ViewRebuilder,
    view_base,
)
from derivgraph.compiler.ir import Node, NodeKind
from derivgraph.compiler.layers import closed_layers, order_without_rows
from derivgraph.compiler.lower import Action, lower_steps, pass_writes
from derivgraph.compiler.owners import PathReader
from derivgraph.compiler.transaction import ModelTransaction
from derivgraph.errors import AdoptionError, Rule, SpecIssue, SpecValidationError
from derivgraph.paths import get_path
from derivgraph.runtime.accessors import HeldColumn, PathReads, ProvenOwners, read_paths
from derivgraph.runtime.containers import collect_containers
from derivgraph.runtime.engine import foreach_copy
from derivgraph.runtime.entry import EntryTable, ProvenColumn
from derivgraph.runtime.entry_columns import EntryColumn, entry_columns, held_columns
from derivgraph.runtime.plan import Entry, Plan, Step, address_of
from derivgraph.runtime.source_ptrs import SourcePtrs
from derivgraph.spec.check import check_specs
from derivgraph.spec.kinds import HELD_KINDS, TensorKind, is_engine
from derivgraph.spec.model import Spec

__all__ = ["Entry", "Plan", "Step", "bits_equal", "check_plan", "compile_plan", "refresh_layouts"]

logger = logging.getLogger(__name__)


class CompileValues(EagerInterpreter):
    """Every node's value from the live sources (reads only); an engine tensor without a
    formula is the engine's own."""

    def run(self, order: list[str] | None = None) -> dict[str, Any]:
        """As :meth:`Interpreter.run`; a derived tensor with an input is that input's value
        (what :meth:`derived` gives it), taken in the sweep without a call per node."""
        nodes, env, derived = self.graph.nodes, self.env, self.graph.derived_view
        for node_id in self.graph.ordered() if order is None else order:
            if dict.__contains__(env, node_id):  # a ColumnValues' kept rows are no node's
                continue
            decl = derived.get(node_id)
            if decl is not None and decl.input is not None:
                env[node_id] = env[decl.input]
            else:
                env[node_id] = self.run_node(nodes[node_id])
        return env

    def derived(self, node: Node, value: Any) -> Any:
        decl = self.graph.derived_view[node.id]
        if decl.input is None and is_engine(decl.decl):
            return self.paths.get(node.id)
        return value


def _evaluate_all(graph: DerivedGraph, sources: dict[str, Any] | None = None,
                  book: ColumnLayouts | None = None) -> dict[str, Any]:
    """Every node's value (reads only; ``sources``: source tensors already read, by path); an
    op that raises is a DG030 issue naming the node. ``book``: where the stamped columns'
    values' layouts are recorded (known where one call made a column). The answer keeps the
    stamped columns' values as columns (:class:`~derivgraph.compiler.columns.ColumnValues`:
    a row's value is its column's row) where the rest of the order is evaluated without the
    rows; else it holds every row's value by id before the walk."""
    interp = CompileValues(graph, sources)
    interp.env = ColumnValues()
    order = graph.ordered()
    with torch.no_grad():
        filled: FilledColumns = {}  # the columns it put in the env (not swept again)
        evaluate_columns(graph, interp.env, interp.source_at, book, filled,  # one call a column
                         interp.sources)
        # the closed rows' nodes but their derived tensors have values: the rest of the order
        # (the order's spans cut out: nothing outside a span reads into it) is evaluated,
        # then the rows' derived tensors a column at a time (no row node raises)
        tables = closed_layers(graph)
        rows = derived_columns(graph, tables, interp.env, filled) if tables else None
        rest = graph.unspanned(tables) if rows is not None else None
        walk = order if rest is None else rest
        if rest is None:  # the walk reads the rows by id: the columns are put in the dict
            interp.env.fill()
        try:
            interp.run(walk)
        except Exception as exc:  # re-raised as a spec issue that names the node
            env = interp.env  # every node before the one that raised has its value
            node_id = next(n for n in walk if n not in env)
            raise SpecValidationError([fault_issue(graph, node_id, exc)]) from exc
        if rest is not None and rows is not None:
            fill_derived(rows, interp.env, book)
            if book is not None:  # the templates' values under their columns' records
                admit_templates(book, tables, interp.env)
    return interp.env


#: Up to this many unmatched specs are named in the warning itself (more: counted).
_NAMED_UNMATCHED = 3


def compile_plan(model: nn.Module, specs: Iterable[Spec] | None = None, *,
                 require_match: bool | Iterable[str] = False, strict: bool = True) -> Plan:
    """Bind ``specs`` (default: built-in + plugins) to ``model`` and allocate-or-adopt once.

    Raises :class:`SpecValidationError` or :class:`AdoptionError` before touching any tensor.
    ``require_match`` makes a spec that matches no module an error (``True``: every spec; a
    collection of spec names: those). Otherwise explicit specs matching nothing are counted in
    one WARNING line and listed at INFO; ``plan.unmatched`` names them. ``strict`` (the plan's
    default for :meth:`Plan.run`) refuses a reload whose sources changed shape or dtype.
    """
    gc_was_enabled = gc.isenabled()
    gc.disable()  # compile makes many small objects and frees few: collection is pure overhead
    try:
        return _compile(model, specs, require_match, strict)
    finally:
        if gc_was_enabled:
            gc.enable()


def check_plan(model: nn.Module, specs: Iterable[Spec] | None = None, *,
               require_match: bool | Iterable[str] = False) -> list[SpecIssue]:
    """Every issue :func:`compile_plan` would raise before allocating, without touching the
    model (``derivgraph validate --model``): the spec rules, binding, inference, evaluation
    of every formula on the model's values, and adoption."""
    try:
        _prepare(model, specs, require_match, strict=True)
    except (SpecValidationError, AdoptionError) as exc:
        return list(exc.issues)
    return []


def _prepare(model: nn.Module, specs: Iterable[Spec] | None,
             require_match: bool | Iterable[str], strict: bool,
             proven: list[ProvenColumn] | None = None, order: list[list[Any]] | None = None,
             ) -> tuple[Plan, dict[str, Any], list[tuple[Entry, Extra]], PathReader]:
    """Everything before the first write: bind, build, infer, evaluate, plan adoption (and
    the reader that read every derived tensor's owner; ``proven``: the stamped columns
    adoption took whole are appended; ``order``: adoption's ids and positions, as
    :func:`~derivgraph.adoption.adopt_or_allocate` appends them)."""
    from derivgraph.spec.load import default_specs

    explicit = specs is not None
    specs = list(default_specs() if specs is None else specs)
    # the one model-free rule set (same codes as `derivgraph validate`), then owner and name
    # safety of the matches; both before any tensor or attribute is touched.
    issues = check_specs(specs)
    if issues:
        raise SpecValidationError(issues)
    bound = match_specs(model, specs)
    issues = check_bindings(bound)
    if issues:
        raise SpecValidationError(issues)
    graph = build_graph(model, bound)
    matched = set(map(_SPEC_NAME, specs_of(bound)))
    unmatched = [spec for spec in specs if spec.name not in matched]
    folds = compile_folds(model, bound, graph.issues, graph.derived_ids)  # fold hook
    required = set() if require_match is False else None if require_match is True else \
        set(require_match)
    for spec in unmatched:
        if required is None or spec.name in required:
            graph.issues.append(SpecIssue(
                Rule.NO_MATCH, f"spec {spec.name!r} matches no module of "
                f"{type(model).__name__}", "check target classes, object and where",
                spec.location))
    if unmatched and explicit and not graph.issues:
        names = ", ".join(f"{s.name} ({s.location})" for s in unmatched)
        few = len(unmatched) <= _NAMED_UNMATCHED
        logger.warning("%d of %d spec(s) match no module of %s%s (require_match makes it an "
                       "error)", len(unmatched), len(specs), type(model).__name__,
                       f": {names}" if few else "; listed at INFO level (-v)")
        if not few:
            logger.info("specs matching no module of %s: %s", type(model).__name__, names)
    graph.raise_if_issues()
    plan = Plan(model, graph)
    plan.unmatched = [s.name for s in unmatched]
    plan.strict = strict
    plan.meta_env = graph.meta_env
    plan.folds = folds  # compile records the engine's first fold as applied
    plan.relayout = refresh_layouts  # run(strict=False) re-allocates through the driver
    # the sources as building the graph read them (nothing was written since), then dropped
    sources, graph.read_sources = graph.read_sources, {}
    # the layouts of the columns' values and storages, proved where they are made: the
    # compile's readers take them instead of reading each tensor again (_compile drops them)
    plan.tensors.layouts = ColumnLayouts()
    _record_sources(plan.tensors.layouts, graph)
    values = _evaluate_all(graph, sources, plan.tensors.layouts)
    owners = PathReader(model)
    order = [] if order is None else order
    planned = adopt_or_allocate(plan, values, owners, proven, order)
    # a view is decided per row (adoption's stamped columns take allocated tensors and
    # aliases only): its rows are at the positions adoption decided one by one
    rows = map(planned.__getitem__, order[-1])
    _raise_if(view_issues((e.node, values.get(e.id), values.get(x.base))
                          for e, x in rows if isinstance(x, ViewOf)))
    return plan, values, planned, owners


def _record_sources(book: ColumnLayouts, graph: DerivedGraph) -> None:
    """Record in ``book`` each source column the build's column proof proved the layout of
    (:attr:`~derivgraph.compiler.graph.DerivedGraph.proven_sources`, then dropped from the
    graph), where that layout proves a record (:func:`~derivgraph.column_layout.proven_layout`).
    The book answers for those very tensors (by identity) during this compile only: a source
    the model holds in their place later is read as before."""
    proven, graph.proven_sources = graph.proven_sources, []
    for tensors, layout in proven:
        record = proven_layout(layout)
        if record is not None:
            book.add(tensors, record, source=True)


def _compile(model: nn.Module, specs: Iterable[Spec] | None,
             require_match: bool | Iterable[str], strict: bool) -> Plan:
    proven: list[ProvenColumn] = []  # adoption's whole columns: entry_columns takes their facts
    order: list[list[Any]] = []  # adoption's ids (planned's order) and its rows in no column
    plan, values, planned, owners = _prepare(model, specs, require_match, strict, proven, order)
    graph = plan.graph
    ids, outside = order
    # stamped layers' allocated attributes: one record per template column (entry_columns)
    by_id = PlannedById(ids, planned, outside, graph.derived_ids)  # adoption's: derived ones
    columns = entry_columns(closed_layers(graph), by_id, owners, proven)
    # Nothing was touched so far. Now allocate, fill and bind: all of it, or none of it. A
    # column's owners are recorded as its one fresh name (what its bind stores), the objects
    # above them and every other entry's owner whole; a column row is never adopted.
    at_rest = _outside_columns(ids, columns, proven, outside)
    proven.clear()  # taken: the compile keeps no second reference to adoption's lists
    rest = list(map(planned.__getitem__, at_rest))  # the entries in no column, in order
    paths = list(map(EntryColumn.owner_paths, columns))  # each column's, read once
    transaction = ModelTransaction(model, _owner_paths(rest, paths),
                                   [e.storage for e, x in rest
                                    if x is None and isinstance(e.storage, torch.Tensor)],
                                   owners,  # adoption's reader: nothing was written since
                                   [(column.owners, column.name) for column in columns])
    try:
        fills: list[tuple[torch.Tensor, torch.Tensor]] = []  # new storage, its value
        owed: list[OwedFill] = []  # the columns the pass writes: allocated, not filled
        book = plan.tensors.layouts or ColumnLayouts()  # made by _prepare
        plan.tensors.layouts = book
        deps = graph.source_deps()
        with torch.no_grad():
            for column in columns:
                if pass_writes(graph.derived_node(column.template), deps):
                    owed.append(OwedFill(column.ids, []))
                    column.allocate(_column_values(column, values), owed[-1].fills,
                                    allocate_column, book)
                    continue
                column.allocate(_column_values(column, values), fills, allocate_column, book,
                                filled_column)
            generic = _fill_entries(plan, ids, planned, at_rest, fills, columns)
            plan.entries.set_columns(columns, generic, ids)
            for column in columns:  # a template's storage joins its rows' record if it has it
                layout = book.common(column.storages)
                template = plan.entries.get(column.template)
                if layout is not None and template is not None:
                    book.admit(template.storage, layout)
            foreach_copy([s for s, _ in fills], [v for _, v in fills])  # nothing read them yet
        _raise_if(view_issues((e.node, e.storage,  # a column holds no view
                               _storage_of(plan, view_base(graph, e.node.input)))
                              for e in generic.values() if e.node.kind is TensorKind.VIEW))
        # each proven against its entries' own owner paths first (a table's next column by
        # the previous one's proof: the same paths and owners, row by row)
        last: ProvenOwners | None = None
        for column, rows in zip(columns, paths):
            last = column.bind(owners, last, rows)
        others = list(generic.values())
        held = held_columns(columns, others, owners)  # the holders' walk takes their owners
        plan.holders.rebind_entries(others)
        # the engine's tuples (a column's rows are attributes, never a tuple's items)
        plan.containers = collect_containers(others, model)
        # the sources through adoption's reader where no store since (the columns' names, the
        # rebound entries') is a hop of an owner it read; else a fresh reader
        written = {column.name for column in columns} | set(map(_NAME, others))
        read, reads = _record_startup(plan, owners if owners.untouched_by(written) else None)
        # nothing writes the model in between: sources and their holders read once
        _lower(plan, values, read, held, reads, owed, (ids, at_rest))
        plan.prepare()  # what the first run and refill would build lazily
    except BaseException:
        transaction.rollback()
        raise
    finally:
        plan.tensors.layouts = None
        for column in columns:  # the eager values: the plan does not keep them
            column.values = []
    logger.info("compiled %d derived tensors (%d adopted) over %d sources, %d steps, %d groups, "
                "%d CSE hits", len(plan.entries), plan.entries.adopted(),
                len(plan.source_ptrs), plan.programs.step_count(),
                plan.program.groups if plan.program else 0, graph.cse_hits)
    return plan


def _outside_columns(ids: list[str], columns: Sequence[EntryColumn],
                     proven: Sequence[ProvenColumn], outside: list[int]) -> list[int]:
    """The positions (ascending) of the ``ids`` in no column of ``columns``. Where every
    column's ids are those of a distinct column of ``proven`` (the very list) and the columns
    hold as many rows as ``proven``'s, the columns are ``proven``'s, all of them: the answer
    is ``outside`` (adoption's positions of the ids in no column of ``proven``); else each
    id is looked up in the columns' ids."""
    taken = {id(p.ids): len(p.ids) for p in proven}
    mine = set(map(id, map(_IDS, columns)))
    if len(mine) == len(columns) and mine.issubset(taken) \
            and sum(map(len, columns)) == sum(taken.values()) == len(ids) - len(outside):
        return outside
    in_columns = {i for column in columns for i in column.ids}
    return list(compress(range(len(ids)), map(operator.not_, map(in_columns.__contains__, ids))))


_FIRST = operator.itemgetter(0)
_IDS = operator.attrgetter("ids")
_NAME = operator.attrgetter("node.decl.name")
_SPEC_NAME = operator.attrgetter("name")
_OWNER_PATH = operator.attrgetter("owner_path")
_KIND = operator.attrgetter("kind")
_NODE_KIND, _NODE_INPUT = operator.attrgetter("node.kind"), operator.attrgetter("node.input")
_SECOND = operator.itemgetter(1)


def _fill_entries(plan: Plan, ids: list[str], planned: Sequence[tuple[Entry, Extra]],
                  at_rest: list[int], fills: list[tuple[torch.Tensor, torch.Tensor]],
                  columns: Sequence[EntryColumn] = ()) -> dict[str, Entry]:
    """Put every planned entry in ``plan.entries.by_id`` in the compile's order (``ids``:
    each one's id) and :func:`_materialize` each one at ``at_rest`` (the positions of the
    entries in no column of ``columns``, ascending) when every entry before it is in (what it
    reads: an alias's target, a view's base); returns those entries by id, in order.

    Where the plan holds ``columns``' rows by column (:meth:`Plan.hold_rows`: a column whose
    rows are made where read), those are in at once (and every other column's entries), no
    entry made. Else the stretches between the entries at ``at_rest`` go in by one
    ``dict.update`` each (the same keys, in the same order, as one store each)."""
    held = plan.hold_rows(ids, columns) if columns else None
    generic: dict[str, Entry] = {}
    if held is not None:
        for at in at_rest:
            entry, extra = planned[at]
            _materialize(plan, entry, extra, fills)
            generic[ids[at]] = entry
            held.put(ids[at], entry)
        return generic
    entries = plan.entries.by_id
    done = 0
    for at in at_rest:
        if at > done:
            entries.update(zip(ids[done:at], map(_FIRST, planned[done:at])))
        entry, extra = planned[at]
        _materialize(plan, entry, extra, fills)
        generic[ids[at]] = entries[ids[at]] = entry
        done = at + 1
    entries.update(zip(ids[done:], map(_FIRST, planned[done:])))
    return generic


def _owner_paths(rest: list[tuple[Entry, Extra]], columns: Sequence[list[str]]) -> set[str]:
    """The owner paths a compile's transaction records whole: each entry's of ``rest`` (the
    entries in no column) and the parent of each column row's owner path (``columns``: each
    entry column's rows' owner paths, :meth:`EntryColumn.owner_paths`; a row's owner is
    recorded as the column's fresh name; the columns' distinct paths cut once, in C). A
    column equal, row by row, to one already put in (one layer's columns: the same paths,
    compared by identity first) adds nothing and is not swept again."""
    paths = set(map(_OWNER_PATH, map(_FIRST, rest)))
    rows: set[str] = set()
    swept: list[list[str]] = []
    for column in columns:
        if not any(map(column.__eq__, swept)):
            rows.update(column)
            swept.append(column)
    paths.update(map(_FIRST, map(str.rpartition, rows, repeat("."))))
    return paths


def _raise_if(issues: list[SpecIssue]) -> None:
    if issues:
        raise SpecValidationError(issues)


def _storage_of(plan: Plan, node_id: str) -> Any:
    """A derived tensor's storage, or a source read from the model."""
    entry = plan.entries.by_id.get(node_id)
    return entry.storage if entry is not None else get_path(plan.model, node_id)


def _materialize(plan: Plan, entry: Entry, extra: Extra,
                 fills: list[tuple[torch.Tensor, torch.Tensor]]) -> None:
    """Give ``entry`` its storage: allocate (its fill appended to ``fills``), or the alias/view
    target's object."""
    if isinstance(extra, AliasOf):
        target = plan.entries.by_id.get(extra.target)
        if target is not None:
            entry.storage = target.storage
    elif isinstance(extra, ViewOf):
        base = _storage_of(plan, extra.base)
        entry.storage = ViewRebuilder(plan.graph, base).rebuild(entry.node.input)
    elif isinstance(extra, torch.Tensor):
        entry.storage = allocate_like(extra, entry.node.kind)
        fills.append((entry.storage, extra))


def _record_startup(plan: Plan, owners: PathReader | None = None,
                    ) -> tuple[dict[str, Any], PathReads]:
    """Every entry's startup address and detached alias (the plan's entry columns a column at
    a time, made on first read where the layout book records them; the other entries one by
    one), and every source's object id and address; returns the object read at every source
    path (by ``owners``, a reader of the model as it is now, else a fresh one) and what was
    read on the way (:func:`~derivgraph.runtime.accessors.read_paths`: the holder binding
    takes the sources' holder dicts from it while nothing is written to the model), with
    the addresses recorded of its objects (``ptrs``)."""
    folds = list(plan.folds.entries)
    paths = [*plan.graph.sources(), *folds]
    if owners is None or owners.root is not plan.model:
        owners = PathReader(plan.model)
    tensors, reads = read_paths(owners, paths)
    read = dict(zip(paths, tensors))
    book = plan.tensors.layouts  # the layer proof's source columns: found here once
    runs = book.source_runs(tensors) if book is not None else []
    # their addresses from one read of their words, handed on with them (the holders' source
    # check takes them: not read again)
    ptrs, words = read_addresses(
        tensors, book.unproven_meta(len(tensors), runs) if runs else None)
    for column in plan.entries.columns:  # the compile's book (None after it); an alias
        # column's rows are sources: their addresses were just read
        column.record_startup(plan.tensors.layouts, (tensors, ptrs))
    for entry in plan.entries.generic.values():
        entry.startup_ptr = address_of(entry.storage)
        if entry.node.kind in HELD_KINDS:
            entry.startup_data = entry.storage.detach()
    plan.source_ptrs = SourcePtrs.record(paths, tensors, ptrs, len(folds))  # by column
    if book is not None:  # their addresses: read here once
        book.note_read_addresses(tensors, ptrs, runs)
    return read, reads._replace(ptrs=ptrs, words=words)  # the holders' binding takes them


def _lower(plan: Plan, values: dict[str, Any], read: Mapping[str, Any] | None = None,
           held: Sequence[HeldColumn] = (), reads: PathReads | None = None,
           owed: Sequence[OwedFill] = (), order: tuple[list[str], list[int]] | None = None,
           ) -> None:
    """Lower, bind and run the pass once; demote grouping if it is not bit-exact with eager.

    ``read``: every source path's object as the model holds it now (else read again);
    ``held``: the entry columns proved held in their owners' ``__dict__`` only
    (:func:`~derivgraph.runtime.entry_columns.held_columns`); ``reads``: what reading
    ``read`` read on the way (:meth:`Plan.bind_tensors`); ``owed``: the fills of the
    columns allocated unfilled because the pass writes their rows (:func:`pass_writes`),
    done before the pass runs where a row is no target of the installed pass's writes;
    ``order``: the entries' ids in their order and the positions of those in no column
    (:func:`_constant_entries`)."""
    graph = plan.graph
    deps, nodes = graph.source_deps(), graph.nodes
    # the rows of templates with no source-free op are left out of the sweep: the nodes left
    # are the topological order's (every node once) without those rows, cut at its spans
    # where it can (the lowering's rule: no set of every row's id), in the nodes' order
    skipped = _no_constant_rows(graph, deps)
    rest = filter(set(order_without_rows(graph, skipped)).__contains__, nodes) if skipped \
        else nodes
    ids = list(rest)
    ops = list(compress(ids, map(operator.is_, map(_KIND, map(nodes.__getitem__, ids)),
                                 repeat(NodeKind.OP))))
    plan.tensors.constants = _tensor_values(  # the source-free ops' tensor values
        list(compress(ops, map(operator.not_, map(deps.__getitem__, ops)))), values)
    plan.constant_entries = _constant_entries(plan, deps, order)
    # what a refill may overwrite with the engine's value; the next recompute puts it back
    plan.constant_values = _tensor_values(plan.constant_entries, values)
    plan.bind_tensors(read, held, reads)
    steps = lower_steps(plan.tensors)
    plan.tensors.alloc_stages({s.target: values[s.input] for s in steps
                               if s.action is Action.SCALAR
                               and isinstance(values.get(s.input), torch.Tensor)})
    program = plan.install(steps)
    paid = _pay(plan, owed) if owed else None
    written, whole = (None, ()) if paid is None else paid
    if not steps:
        return
    with torch.no_grad():
        try:
            program.fn()
        except Exception as exc:  # a fault in the first lowered pass, named by node
            raise plan.programs.fault(program, exc) from exc
    bad = _mismatches(plan, values, written, whole)
    if bad:
        logger.warning("grouped pass differs from eager evaluation at %s; running per op",
                       ", ".join(bad[:5]))
        with torch.no_grad():
            for node_id in bad:
                plan.entries[node_id].storage.copy_(values[node_id])
        program = plan.install(steps, group=False)
        with torch.no_grad():
            program.fn()
        still = _mismatches(plan, values, written, whole)
        if still:
            raise SpecValidationError([SpecIssue(
                Rule.INFERENCE, f"the lowered pass differs from eager evaluation at {n}",
                "report this as a derivgraph bug", plan.entries[n].node.decl.location, n)
                for n in still])


def _tensor_values(ids: list[str], values: Mapping[str, Any]) -> dict[str, torch.Tensor]:
    """``ids``' values that are tensors, by id in ``ids``' order (an id with no value or
    another one is left out): one C-level sweep per step (the columns a
    :class:`~derivgraph.compiler.columns.ColumnValues` keeps: put in where ``ids`` read them)."""
    found = values.take(ids) if type(values) is ColumnValues else list(map(values.get, ids))
    return dict(compress(zip(ids, found), map(isinstance, found, repeat(torch.Tensor))))


def _constant_entries(plan: Plan, deps: Mapping[str, frozenset[str]],
                      order: tuple[list[str], list[int]] | None = None) -> list[str]:
    """The plan's entries that are held, computed (an input) and free of sources, in the
    entries' order: :func:`_constants_of` over every entry, or, where every entry column is
    an :class:`EntryColumn` (a closed stamped table's template column), answered per column.

    A closed row's node depends on a source exactly where its template's does (the rule
    :func:`_no_constant_rows` relies on): a column whose template depends on a source has
    no source-free row and is skipped unread; every row of a column whose template depends
    on none is source-free. The generic entries are swept one by one; where a column gave
    any, the answer is the entries' ids filtered by the ids found (their order), or, with
    ``order`` (the compile's: the entries' ids in their order, the generic ones' positions),
    put at their positions there (:func:`_at_positions`)."""
    entries = plan.entries
    columns = entries.columns
    if not all(isinstance(c, EntryColumn) for c in columns):
        return _constants_of(entries.items(), deps)
    found = _constants_of(entries.generic.items(), deps)
    free = [c for c in columns if isinstance(c, EntryColumn) and not deps[c.template]]
    if not free:
        return found
    rows = [_column_constants(column) for column in free]
    placed = None if order is None else _at_positions(order, entries, found, rows)
    if placed is not None:
        return placed
    for taken in rows:
        found += taken
    kept = set(found)
    return list(filter(kept.__contains__, entries.by_id))


def _at_positions(order: tuple[list[str], list[int]], entries: EntryTable,
                  generic: list[str], rows: list[list[str]]) -> list[str] | None:
    """The ids of ``generic`` (some generic entries of ``entries``, in order) and of
    ``rows`` (rows of its columns) in the entries' order, read off ``order`` (``ids``: the
    entries' ids, each once, in the order the compile put them in, :func:`_fill_entries`;
    ``at``: the positions of the generic ones): each generic id at the position of ``at``
    holding it, each list of ``rows`` at the evenly spaced positions holding it
    (:func:`~derivgraph.adoption.span_of`), marked and read back in order. None where
    ``ids`` are not as many as the entries, or ``at`` as the generic entries, or an id lies
    at no such position (the caller filters the entries)."""
    ids, at = order
    if len(ids) != len(entries) or len(at) != len(entries.generic):
        return None
    marks = bytearray(len(ids))
    if generic:
        position = dict(zip(map(ids.__getitem__, at), at))
        for node_id in generic:
            if node_id not in position:
                return None
            marks[position[node_id]] = 1
    for taken in rows:
        span = span_of(ids, taken)
        if span is None:
            return None
        marks[span] = b"\x01" * len(taken)
    return list(compress(ids, marks))


def _constants_of(items: Iterable[tuple[str, Entry]], deps: Mapping[str, frozenset[str]],
                  free: bool = False) -> list[str]:
    """The ids among ``items`` (id, entry) whose entry is held, computed (its node has an
    input) and depends on no source (``deps``; ``free``: every item is proven source-free,
    ``deps`` is not read), in their order (:func:`_constant_ids` of their nodes' kinds and
    inputs)."""
    pairs = list(items)
    entries = list(map(_SECOND, pairs))
    return _constant_ids(map(_FIRST, pairs), map(_NODE_KIND, entries),
                         map(_NODE_INPUT, entries), deps, free)


def _column_constants(column: EntryColumn) -> list[str]:
    """:func:`_constants_of` of a source-free column's rows, their kind and inputs read as
    the column's (:attr:`EntryColumn.kind`, :meth:`EntryColumn.inputs`: no row's node
    made)."""
    return _constant_ids(column.ids, repeat(column.kind), column.inputs(), {}, True)


def _constant_ids(ids: Iterable[str], kinds: Iterable[TensorKind],
                  inputs: Iterable[str | None], deps: Mapping[str, frozenset[str]],
                  free: bool) -> list[str]:
    """The ids among ``ids`` whose derived tensor (its kind and input: ``kinds``' and
    ``inputs``' items, in the same order) is held, computed (an input) and depends on no
    source (``deps``; ``free``: proven source-free, ``deps`` not read), in their order: the
    one rule for the plan's constant entries."""
    return [n for n, kind, value in zip(ids, kinds, inputs)
            if (free or not deps[n]) and kind in HELD_KINDS and value is not None]


def _no_constant_rows(graph: DerivedGraph, deps: Mapping[str, frozenset[str]],
                      ) -> list[InstanceTable]:
    """The closed stamped tables (:func:`closed_layers`) whose template has no op free of
    sources: none of their rows' ops is (a closed row's op has no source dependency where
    its template's has none: the same kinds and inputs at the same positions)."""
    nodes = graph.nodes
    return [table for table in closed_layers(graph)
            if all(nodes[t].kind is not NodeKind.OP or deps[t] for t in table.template)]


class OwedFill(NamedTuple):
    """An entry column allocated unfilled (the pass writes its rows: :func:`pass_writes`):
    its rows' ids and each row's fill (its storage, its value), owed until the installed
    pass is proven to write every row (:func:`_pay`)."""

    ids: list[str]
    fills: list[tuple[torch.Tensor, torch.Tensor]]


class Paid(NamedTuple):
    """What :func:`_pay` found: the installed pass's targets as a set, and the ids lists
    (:attr:`OwedFill.ids`, the very lists) of the owed columns whose every row is one."""

    written: set[str]
    whole: list[list[str]]


def _pay(plan: Plan, owed: Sequence[OwedFill]) -> Paid:
    """Fill each of ``owed`` with a row that is no target of the installed pass's writes
    (:meth:`~derivgraph.runtime.programs.Programs.written`: each written whole, before any
    step reads it: the steps run in topological order), before the pass runs; the others
    stay unfilled (the pass's bit check compares every target). Returns those targets as a
    set and the columns written whole (the bit check's, :func:`_mismatches`)."""
    written = set(plan.programs.written())
    whole, unpaid = [], []
    for column in owed:
        if all(map(written.__contains__, column.ids)):
            whole.append(column.ids)
        else:
            unpaid += column.fills
    if unpaid:
        with torch.no_grad():
            foreach_copy([s for s, _ in unpaid], [v for _, v in unpaid])
    return Paid(written, whole)


def _mismatches(plan: Plan, values: dict[str, Any], written: set[str] | None = None,
                whole: Sequence[list[str]] = ()) -> list[str]:
    """The targets of written steps whose storage is not bit for bit their eager value
    (``written``: those targets as a set, where the caller made it; ``whole``: ids lists
    of columns proven within it, :func:`_pay`'s).

    During the compile (the layout book is set), an entry column whose every row is written
    is compared whole where the book holds its storages and its values under one record each
    (:func:`_columns_equal`); only the other targets are paired one by one."""
    targets = plan.programs.written()
    entries, book = plan.entries.by_id, plan.tensors.layouts
    equal = _columns_equal(plan.entries.columns, values, targets, book, written, whole) \
        if book is not None else set()
    if equal:  # the same answer for them: each pair's bits are equal
        targets = list(filterfalse(equal.__contains__, targets))
    pairs = [(entries[t].storage, values[t]) for t in targets]
    same = _bits_equal_all(pairs, book)
    return [t for t, ok in zip(targets, same) if not ok]


def _columns_equal(columns: Sequence[Any], values: dict[str, Any], targets: list[str],
                   book: ColumnLayouts, written: set[str] | None = None,
                   whole: Sequence[list[str]] = ()) -> set[str]:
    """The ids of the entry columns among ``targets`` (each row a target; ``written``:
    ``targets`` as a set, where the caller made it; ``whole``: ids lists, the very lists,
    every id of which the caller found in ``written``: a column's ids among them are not
    looked up again) whose storages
    and values are bit for bit equal, each column compared in one batch (:func:`_batch_key`,
    :func:`_batch_equal`); a column that is not batched or differs is left out (its pairs
    are compared one by one). A column's storages are read from the column: its entries hold
    them while the plan's table keeps it (:meth:`~derivgraph.runtime.entry.EntryTable.
    storages`' rule; a relayout opens the columns). Its values are joined by the book where
    it noted them as one result's slices (:meth:`ColumnLayouts.whole`), else by their places
    (:func:`_joined`)."""
    out: set[str] = set()
    for column in columns:
        ids = column.ids
        if len(ids) < 2:
            continue
        if written is None:
            written = set(targets)
        if not any(map(operator.is_, whole, repeat(ids))) \
                and not all(map(written.__contains__, ids)):
            continue
        ours = column.storages  # what its entries hold (the table's column answer)
        if len(ours) != len(ids):
            continue
        theirs = _column_values(column, values)
        record = book.common(theirs)
        key = _batch_key(book.common(ours), record)
        if key is None:
            continue
        joined = book.whole(theirs)  # the values as one call made them, noted there
        if joined is None:
            joined = _joined(theirs, record.shape, record.contiguous is True)
        if _batch_equal(ours, theirs, key, joined):
            out.update(ids)
    return out


def _column_values(column: EntryColumn, values: dict[str, Any]) -> list[Any]:
    """Each row's eager value of an entry column: the values it kept from adoption (each
    row's planned extra, the very object ``values`` holds at its id: an allocated entry's
    extra is its value), else ``values``' (:func:`~derivgraph.compiler.columns.row_values`:
    the column's as evaluation kept it, else by id)."""
    kept = column.values
    return kept if len(kept) == len(column.ids) else row_values(values, column.ids)


def _joined(tensors: Sequence[Any], shape: torch.Size, row_major: bool = False,
            ) -> torch.Tensor | None:
    """``torch.cat`` of ``tensors`` (each of ``shape``: its layout record's) flattened,
    without a copy, where they tile one contiguous ``base`` in order (a column's values as
    its one call made them, unbound): each contiguous, at the next address of ``base`` (the
    first's ``_base``) from its first element on, as many elements in all as ``base`` holds
    (live allocations never overlap: a tensor at an address inside ``base``'s elements reads
    ``base``'s memory there; a base of another element size holds another count of
    elements); else None. ``row_major``: the layout record proves every one
    of ``tensors`` row-major (so contiguous: not read again)."""
    base = getattr(tensors[0], "_base", None) if tensors else None
    n, numel = len(tensors), math.prod(shape)
    if base is None or numel == 0 or base.numel() != n * numel \
            or not base.is_contiguous():
        return None
    start, step = base.data_ptr(), numel * base.element_size()
    if list(map(_ADDRESS, tensors)) != list(range(start, start + n * step, step)) \
            or not (row_major or all(map(_CONTIGUOUS, tensors))):
        return None
    return base.reshape(-1)


_ADDRESS, _CONTIGUOUS = torch.Tensor.data_ptr, torch.Tensor.is_contiguous


def _batch_key(ours: Any, theirs: Any) -> tuple[torch.dtype, torch.device, Any] | None:
    """The batch of a pair of layout records (dtype, device, the sizes past the first dim:
    None for 0-dim); None where the pairs are not batched (:func:`_bits_equal_all`)."""
    if ours is None or theirs is None or ours.dtype != theirs.dtype \
            or ours.shape != theirs.shape or ours.device != theirs.device \
            or ours.dtype not in _BATCHED_BITS or ours.numel > _BATCH_NUMEL:
        return None
    shape = ours.shape
    return ours.dtype, ours.device, shape[1:] if shape else None


def _batch_equal(left: Sequence[Any], right: Sequence[Any],
                 key: tuple[torch.dtype, torch.device, Any],
                 joined: torch.Tensor | None = None) -> bool:
    """Whether the tensors of ``left`` and ``right`` (one batch, ``key``), concatenated along
    dim 0 as they are (a 0-dim one flattened), are bit for bit equal as a whole: each pair
    then is (the pieces have equal sizes). ``joined``: ``right`` concatenated and flattened
    already (:func:`_joined`)."""
    as_int = _BATCHED_BITS[key[0]]
    if key[2] is None:
        a = torch.cat([t.reshape(-1) for t in left])
        b = torch.cat([t.reshape(-1) for t in right]) if joined is None else joined
    else:
        a = torch.cat(list(left))
        b = torch.cat(list(right)) if joined is None else joined
    return torch.equal(a.reshape(-1).view(as_int), b.reshape(-1).view(as_int))


#: dtypes compared in batches (flattened, concatenated, read as integers of their size)
_BATCHED_BITS = {torch.float16: torch.int16, torch.bfloat16: torch.int16,
                 torch.float32: torch.int32, torch.float64: torch.int64,
                 torch.int8: torch.int8, torch.uint8: torch.uint8, torch.int16: torch.int16,
                 torch.int32: torch.int32, torch.int64: torch.int64, torch.bool: torch.uint8}


#: larger tensors are compared on their own (a batch copies what it compares)
_BATCH_NUMEL = 1 << 16


def _bits_equal_all(pairs: list[tuple[Any, Any]], book: ColumnLayouts | None = None,
                    ) -> list[bool]:
    """:func:`bits_equal` of each pair: the pairs of one dtype and device whose shapes and
    dtypes agree (small ones) are compared in one concatenation (equal as a whole: each pair
    equal, the pieces having equal sizes); any other pair, and every pair of a batch that
    differs, on its own. ``book``: the pairs whose two tensors it holds are batched by their
    columns' layout records (proved where they were made), the rest by reading each."""
    out: list[bool | None] = [None] * len(pairs)
    # (dtype, device, the sizes past the first dim: None for 0-dim) -> pair indices; tensors
    # of one batch concatenate along dim 0 as they are (a 0-dim one flattened)
    batches: dict[tuple[torch.dtype, torch.device, Any], list[int]] = {}
    read: Iterable[int] = range(len(pairs))
    if book is not None:
        read = []
        by_layouts: dict[tuple[Any, Any], list[int]] = {}  # (record, record) -> pair indices
        for i, held in enumerate(zip(book.of([a for a, _ in pairs]),
                                     book.of([b for _, b in pairs]))):
            by_layouts.setdefault(held, []).append(i)
        for (ours, theirs), members in by_layouts.items():
            key = _batch_key(ours, theirs)
            if ours is None or theirs is None:
                read += members
            elif key is not None:
                batches.setdefault(key, []).extend(members)
        read.sort()
    for i in read:
        a, b = pairs[i]
        if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.dtype == b.dtype \
                and a.shape == b.shape and a.device == b.device and a.dtype in _BATCHED_BITS \
                and a.numel() <= _BATCH_NUMEL:
            shape = a.shape
            batches.setdefault((a.dtype, a.device, shape[1:] if shape else None), []).append(i)
    for members in batches.values():
        members.sort()  # each batch in pair order, however its members were found
    for key, members in batches.items():
        if len(members) < 2:
            continue
        if _batch_equal([pairs[i][0] for i in members], [pairs[i][1] for i in members], key):
            for i in members:
                out[i] = True
    return [bits_equal(*pairs[i]) if ok is None else ok for i, ok in enumerate(out)]


def refresh_layouts(plan: Plan, changed: list[str]) -> list[str]:
    """Permissive reload: re-infer layouts, re-allocate derived tensors that changed, re-lower.

    Config numbers folded into params at compile (``E = w.shape[0]``) stay frozen: a formula
    whose constants came from a changed shape needs a new plan.
    """
    graph = plan.graph
    layouts = {}
    for src in changed:
        tensor = get_path(plan.model, src)
        node = graph.nodes[src]
        layouts[src] = (node.shape, node.stride, node.dtype, node.device)
        node.shape, node.stride = tuple(tensor.shape), tuple(tensor.stride())
        node.dtype, node.device = tensor.dtype, tensor.device
    meta_env = MetaInterpreter(graph).run()
    graph.meta_env, graph.issues = meta_env, []
    index_issues(graph)  # constant indices against the new sizes, before anything is read
    if graph.issues:
        issues, graph.issues, graph.meta_env = graph.issues, [], plan.meta_env
        for src, (shape, stride, dtype, device) in layouts.items():  # the plan stays as it was
            node = graph.nodes[src]
            node.shape, node.stride, node.dtype, node.device = shape, stride, dtype, device
        raise SpecValidationError(issues)
    plan.meta_env = meta_env
    for node_id, node in graph.derived.items():
        meta = plan.meta_env.get(node_id)
        if isinstance(meta, torch.Tensor):
            node.meta = meta
    values = _evaluate_all(graph)
    reallocated = []
    plan.entries.open_columns()  # an entry of a column may take new storage below
    with torch.no_grad():
        for node_id in graph.ordered():
            entry = plan.entries.get(node_id)
            if entry is None:
                continue
            value = values[node_id]
            kind = entry.node.kind
            if kind is TensorKind.SCALAR or entry.node.input is None:  # an opaque engine tensor
                continue
            if kind is TensorKind.ALIAS:
                target = plan.entries.get(entry.node.input)
                new = target.storage if target is not None else value
            elif kind is TensorKind.VIEW:
                base_id = view_base(graph, entry.node.input)
                base = plan.entries[base_id].storage if base_id in plan.entries else value
                new = ViewRebuilder(graph, base).rebuild(entry.node.input)
            elif entry.storage.shape != value.shape or entry.storage.dtype != value.dtype:
                new = allocate_like(value, kind)
            else:
                new = entry.storage
            if new is not entry.storage:
                entry.storage = new
                reallocated.append(node_id)
            if kind in HELD_KINDS and isinstance(value, torch.Tensor):
                entry.storage.copy_(value)
    _record_startup(plan)
    plan.restore_containers()  # a tuple around re-allocated items is rebuilt
    plan.holders.rebind_entries(plan.entries.values())
    _lower(plan, values)
    return reallocated
