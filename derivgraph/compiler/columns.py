"""Compile-time values of stamped layers' ops: one torch call per template column.

Compile evaluates every formula on the live sources once (``planner.CompileValues``): the
values it allocates from and checks the first pass against, bit for bit. For the closed rows of
a template (:func:`~derivgraph.compiler.layers.closed_layers`: its stamped layers whose subgraph
is its own renamed), an op position of the template is a *column*: the same op with the same
constants in every row (the replay made each from the template's call), over each row's own
tensors. :func:`evaluate_columns` reads a column from the template's node and the table's ids
(never a row's node) and evaluates it as one call: each operand position's tensors stacked (one
``torch.stack``), the op applied once, the result unbound into one value per layer. Only where
that is bit for bit the per-layer call: the ops that give the same bits on one element or a
vector of them (:data:`~derivgraph.compiler.flat.EXACT_UNARY`,
:data:`~derivgraph.compiler.flat.EXACT_BINARY`, the rule of the flat pass), on float32/float64
tensors of one shape, dtype and device in every operand and layer, with no keyword arguments and
number constants, and a result of the inferred dtype and of each layer's shape. Any other column
(an open row's too), or one whose call raises, is left to the per-node evaluation (which reports
the fault by node).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from itertools import repeat
from operator import attrgetter, is_
from typing import Any

import torch

from derivgraph.column_layout import ColumnLayout, ColumnLayouts, column_layout, row_major
from derivgraph.compiler.flat import EXACT_BINARY, EXACT_UNARY, OP_DTYPES
from derivgraph.compiler.graph import DerivedGraph, NodeRef
from derivgraph.compiler.infer import rows_hold_metas
from derivgraph.compiler.instances import InstanceTable
from derivgraph.compiler.ir import Node, NodeKind
from derivgraph.compiler.layers import closed_layers
from derivgraph.ops import OPS

__all__ = ["MIN_COLUMN", "ColumnValues", "FilledColumns", "derived_columns", "evaluate_columns",
           "admit_templates", "fill_derived", "row_values"]

logger = logging.getLogger(__name__)

#: the fewest layers of a template evaluated as columns (below, the calls saved are few)
MIN_COLUMN = 8
_EXACT = EXACT_UNARY | EXACT_BINARY
_OP, _SOURCE = NodeKind.OP, NodeKind.SOURCE
_NUMBERS = (int, float)
_shape, _dtype, _device = attrgetter("shape"), attrgetter("dtype"), attrgetter("device")
_CONTAINS, _GET = dict.__contains__, dict.get  # a ColumnValues' own keys only (no fill)


class ColumnValues(dict[str, Any]):
    """Every node's compile-time value by id (``planner.CompileValues``' env), where the
    stamped columns :func:`evaluate_columns` evaluates and the derived columns
    :func:`fill_derived` gives are kept as columns, not put in the dict row by row: one rule,
    a row's value is its column's row (:meth:`rows`, :func:`row_values`: the columns' readers
    take them whole). Any per-id read that the dict's own keys do not answer (a missing key,
    ``get``, ``in``, iterating, its length, its views) first puts every kept column's rows
    into the dict (:meth:`fill`: the values the env held by id before), then answers as the
    dict: a reader by id reads what it read before. The evaluation itself reads the dict's own
    keys (``dict.__contains__``/``dict.get``) and the kept columns."""

    __slots__ = ("_kept", "_pending")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: a kept column's first id -> (its ids, its rows' values), in row order
        self._kept: dict[str, tuple[list[str], Sequence[Any]]] = {}
        self._pending: list[tuple[list[str], Sequence[Any]]] = []  # not yet in the dict

    def keep(self, ids: list[str], values: Sequence[Any]) -> None:
        """Keep ``values`` as the values of the nodes ``ids`` (a table's column, in row
        order, as many); the dict takes them only where a per-id read needs them."""
        if ids:
            self._kept[ids[0]] = (ids, values)
            self._pending.append((ids, values))

    def rows(self, ids: list[str]) -> Sequence[Any] | None:
        """The values kept for the nodes ``ids`` (row order; not to be changed) where a kept
        column's ids are ``ids``, item by item; else None."""
        kept = self._kept.get(ids[0]) if ids else None
        return kept[1] if kept is not None and kept[0] == ids else None

    def fill(self) -> None:
        """Put every kept column's rows into the dict (once; the columns stay kept)."""
        pending, self._pending = self._pending, []
        for ids, values in pending:
            self.update(zip(ids, values))

    def take(self, ids: list[str]) -> list[Any]:
        """``get`` of each of ``ids``, in order: the kept columns whose first row is among
        ``ids`` are put into the dict first (the others stay kept), then the dict is read;
        where an id is still missing, every kept column is put in and the dict read again."""
        if self._pending:
            firsts = {p[0][0]: i for i, p in enumerate(self._pending)}
            read = set(map(firsts.__getitem__, filter(firsts.__contains__, ids)))
            pending, self._pending = self._pending, []
            for i, ids_values in enumerate(pending):
                if i in read:
                    self.update(zip(*ids_values))
                else:
                    self._pending.append(ids_values)
        found = list(map(_GET, repeat(self), ids))
        if self._pending and any(map(is_, found, repeat(None))):
            self.fill()
            found = list(map(_GET, repeat(self), ids))
        return found

    def __missing__(self, key: str) -> Any:
        if not self._pending:
            raise KeyError(key)
        self.fill()
        return dict.__getitem__(self, key)

    def get(self, key: str, default: Any = None) -> Any:  # type: ignore[override]
        if self._pending and not _CONTAINS(self, key):
            self.fill()
        return _GET(self, key, default)

    def __contains__(self, key: object) -> bool:
        if self._pending and not _CONTAINS(self, key):
            self.fill()
        return _CONTAINS(self, key)

    def __iter__(self) -> Iterator[str]:
        self.fill()
        return dict.__iter__(self)

    def __len__(self) -> int:
        self.fill()
        return dict.__len__(self)

    def keys(self) -> Any:
        self.fill()
        return dict.keys(self)

    def values(self) -> Any:
        self.fill()
        return dict.values(self)

    def items(self) -> Any:
        self.fill()
        return dict.items(self)

    def copy(self) -> dict[str, Any]:
        self.fill()
        return dict(dict.items(self))

    def __eq__(self, other: object) -> bool:
        self.fill()
        return dict.__eq__(self, other)

    __hash__ = None  # type: ignore[assignment]


def row_values(values: Mapping[str, Any], ids: list[str]) -> list[Any]:
    """The values of the nodes ``ids`` (a column's rows), in order, as a new list: the
    column's as ``values`` keeps it (:class:`ColumnValues`), else each read by id."""
    kept = values.rows(ids) if type(values) is ColumnValues else None
    return list(map(values.__getitem__, ids)) if kept is None else list(kept)


def evaluate_columns(graph: DerivedGraph, env: dict[str, Any],
                     read_source: Callable[[str], Any], book: ColumnLayouts | None = None,
                     filled: FilledColumns | None = None,
                     sources: Mapping[str, Any] | None = None) -> int:
    """Put the value of every op node of the closed stamped columns that qualify into ``env``
    (a :class:`ColumnValues` keeps each such column instead: :meth:`ColumnValues.keep`;
    ``read_source``: a source's value by path, for a source not read yet); the number of
    columns evaluated. ``book``: records each evaluated column's layout (its values are one
    result unbound: its type, dtype and device, and its shape past the first dim).
    ``filled``: each evaluated column's table gets its template position and those of its
    operand columns (every row's value then in ``env``, or kept by it: :data:`FilledColumns`).
    ``sources``: the source tensors ``read_source`` answers from (``read_source(path) is
    sources[path]`` for a path it holds: the build's reads), so that a column of sources none
    of which is in ``env`` yet is read from it in one sweep (:func:`_operands`); the book's
    record of an operand column (a source column the build proved, an evaluated column) gives
    its shape, dtype and device instead of a sweep over its tensors.

    A closed row (:func:`~derivgraph.compiler.layers.closed_layers`) is its template's nodes
    renamed: the same op, keyword arguments and constants at each position (its replay made
    them from the template's call), its own node where the template reads its own, the same
    shared node elsewhere. So a column is read from the template's node and the table's ids,
    never from a row's node; a row that is not closed is left to the per-node evaluation."""
    nodes, done = graph.nodes, 0
    for table in closed_layers(graph):
        if len(table) < MIN_COLUMN:
            continue
        where = {t: i for i, t in enumerate(table.template)}
        stacks: dict[int | str, _Stacked] = {}  # this table's operand columns stacked so far
        for k, first_id in enumerate(table.template):
            first = nodes[first_id]
            if first.kind is not _OP or first.op not in _EXACT or first.kwargs:
                continue
            column = table.column(k)
            if _CONTAINS(env, column[0]):
                continue
            values = _column(graph, env, read_source, table, where, first, column, stacks,
                             book, sources)
            if values is not None:
                if type(env) is ColumnValues:
                    env.keep(column, values)
                else:
                    env.update(zip(column, values))
                done += 1
                if filled is not None:  # _column read every operand row's value into env
                    _, at = filled.setdefault(id(table), (table, set()))
                    at.add(k)
                    at.update(where[a.id] for a in first.args
                              if type(a) is NodeRef and a.id in where)
                if book is not None:
                    _record(book, values)
    return done


#: the template positions of a table whose every row's node has a value in the env, as
#: :func:`evaluate_columns` put them there (an evaluated column and its operand columns): by
#: the table's ``id``, the table itself (so its identity is checked) and the positions
FilledColumns = dict[int, tuple[InstanceTable, set[int]]]


#: an operand column of one table, stacked: its tensors, their one (shape, dtype, device) and
#: their ``torch.stack`` (:func:`_column`'s ``stacks``, by the operand's template position, or
#: by the id of the node every row shares)
_Stacked = tuple[list[torch.Tensor], tuple[Any, ...], torch.Tensor]


def _column(graph: DerivedGraph, env: dict[str, Any], read_source: Callable[[str], Any],
            table: InstanceTable, where: dict[str, int], first: Node,
            column: list[str], stacks: dict[int | str, _Stacked] | None = None,
            book: ColumnLayouts | None = None, sources: Mapping[str, Any] | None = None,
            ) -> tuple[torch.Tensor, ...] | None:
    """Each row's value of one column (template node ``first``; ``where``: the template's
    node -> its position), or None where a check fails. ``stacks``: the table's operand
    columns checked and stacked by earlier columns; an operand whose tensors are, one by one,
    the same objects as a recorded one's takes its layout and its stack (the same values),
    any other is checked and stacked here (and recorded): its one shape, dtype and device from
    ``book``'s record of its tensors where it holds one, else read. ``sources``: as
    :func:`evaluate_columns`'. The values are the result unbound; ``book`` notes them as its
    slices (:meth:`~derivgraph.column_layout.ColumnLayouts.note_whole`)."""
    layout: tuple[Any, ...] | None = None
    call: list[Any] = []
    for arg in first.args:
        if type(arg) is NodeRef:
            at = where.get(arg.id)  # None: the node every row shares
            refs = [arg.id] * len(column) if at is None else table.column(at)
            source = graph.nodes[arg.id].kind is _SOURCE  # each row's has the template's kind
            kept = None
            if type(env) is ColumnValues:
                if at is not None:
                    kept = env.rows(refs)
                elif not source and not _CONTAINS(env, arg.id):  # another table's kept row?
                    env.get(arg.id)
            if kept is None:
                tensors = _operands(env, read_source, refs, source, sources, at is not None,
                                    book)
            else:
                tensors = _tensors(kept, book)
            if tensors is None:
                return None
            key = arg.id if at is None else at
            seen = None if stacks is None else stacks.get(key)
            if seen is not None and (seen[0] is tensors or len(seen[0]) == len(tensors)
                                     and all(map(is_, tensors, seen[0]))):
                mine, stacked = seen[1], seen[2]  # this operand, as an earlier column read it
            else:
                record = None if book is None else book.common(tensors)
                if record is not None:  # proved where the tensors were made or read
                    mine = (record.shape, record.dtype, record.device)
                else:
                    shapes, dtypes, devices = (set(map(f, tensors))
                                               for f in (_shape, _dtype, _device))
                    if len(shapes) != 1 or len(dtypes) != 1 or len(devices) != 1:
                        return None
                    mine = (*shapes, *dtypes, *devices)
                stacked = None
            if mine[1] not in OP_DTYPES or layout not in (None, mine):
                return None
            layout = mine
            if stacked is None:
                stacked = torch.stack(tensors)
                if stacks is not None:
                    stacks[key] = (tensors, mine, stacked)
            call.append(stacked)
        else:
            if type(arg) not in _NUMBERS:
                return None
            call.append(arg)
    if layout is None:
        return None
    try:
        out = OPS[first.op].fn(*call)
    except (RuntimeError, TypeError, ValueError) as exc:  # the per-node pass reports it by node
        logger.debug("column %s (%d layers) left to per-node evaluation: %s", first.id,
                     len(column), exc)
        return None
    meta = _row_meta(graph, table, first.id, column[0])
    shape, dtype, _ = layout
    if not isinstance(out, torch.Tensor) or out.shape != (len(column), *shape) \
            or not isinstance(meta, torch.Tensor) or out.dtype != meta.dtype \
            or tuple(meta.shape) != tuple(shape):
        return None
    values = out.unbind(0)
    if book is not None:  # the values are its slices: their concatenation is ``out``
        book.note_whole(values, out)
    return values


def _row_meta(graph: DerivedGraph, table: InstanceTable, template_id: str, row_id: str) -> Any:
    """Shape inference's meta value of ``row_id`` (a node of ``table``'s rows at
    ``template_id``'s position): the template's where inference recorded giving every row
    the template's values (:func:`~derivgraph.compiler.infer.rows_hold_metas`: the rows'
    are kept aside, not read), else the row's own."""
    env = graph.meta_env
    metas = [env.get(n) for n in table.template]
    if rows_hold_metas(graph, env, table, metas):
        return env.get(template_id)
    return env.get(row_id)


#: one derived column's value: (its table, its template position, the position of its input in
#: the template, else None, and then the id of the one node every row reads)
DerivedColumn = tuple[InstanceTable, int, int | None, str]


def derived_columns(graph: DerivedGraph, tables: list[InstanceTable],
                    env: dict[str, Any], filled: FilledColumns | None = None,
                    ) -> list[DerivedColumn] | None:
    """How ``tables``' rows' derived tensors take their values (each its input's, as
    ``planner.CompileValues.run`` gives it) a column at a time, in an order where a column's
    input column comes first; None where a row's node other than a derived tensor has no value
    in ``env`` yet (each column one C-level sweep), or a template's derived tensor has no
    input. A closed row is its template renamed (:func:`~derivgraph.compiler.layers.
    closed_layers`): its derived tensor's input is the row's own node at the template input's
    position, else the one node every row reads (a constant outside the rows, or another
    table's row node: in ``env`` too once the rest of the order is evaluated). ``filled``:
    the positions :func:`evaluate_columns` proved in ``env`` (not swept again)."""
    derived, out = graph.derived_view, []  # the templates' nodes (a held row's not made)
    for table in tables:
        template = table.template
        where = {t: i for i, t in enumerate(template)}
        mine, known = (filled or {}).get(id(table), (None, set()))
        if mine is not table:
            known = set()
        pending: dict[int, int | None] = {}  # derived position -> its input's position
        for k, node_id in enumerate(template):
            decl = derived.get(node_id)
            if decl is None:
                if k not in known and not all(map(_CONTAINS, repeat(env), table.column(k))):
                    return None
            elif decl.input is None:
                return None
            else:
                pending[k] = where.get(decl.input)
        while pending:
            ready = [k for k, j in pending.items() if j not in pending]
            if not ready:
                return None
            for k in ready:
                j = pending.pop(k)
                out.append((table, k, j, derived[template[k]].input))
    return out


def fill_derived(columns: list[DerivedColumn], env: dict[str, Any],
                 book: ColumnLayouts | None = None) -> None:
    """Put each derived column's values into ``env`` (:func:`derived_columns`'s order): each
    row's derived tensor's value is its input's. A :class:`ColumnValues` keeps each as a
    column instead (:meth:`ColumnValues.keep`): its input column's kept values where it keeps
    them (the same sequence), else its input's read by id. ``book``: a column whose every row
    reads the one shared node (one object, repeated) is recorded there under its one layout
    (:func:`~derivgraph.column_layout.column_layout`: the object read once), the record its
    entry column's allocation would make of those values, where the book holds a tensor
    already (so it is no fresh column: :meth:`~derivgraph.column_layout.ColumnLayouts.add`)."""
    for table, k, j, shared in columns:
        ids = table.column(k)
        if type(env) is ColumnValues:
            if j is None:
                one = [env[shared]] * len(ids) if ids else []
                env.keep(ids, one)
                layout = column_layout(one) if book and one else None
                if layout is not None:
                    book.add(one, layout)  # type: ignore[union-attr]
            else:
                inputs = table.column(j)
                kept = env.rows(inputs)
                env.keep(ids, kept if kept is not None else list(map(env.__getitem__, inputs)))
        elif j is not None:
            env.update(zip(ids, map(env.__getitem__, table.column(j))))
        elif ids:  # every row reads the one shared node: its value looked up once
            env.update(zip(ids, repeat(env[shared])))


def admit_templates(book: ColumnLayouts, tables: list[InstanceTable],
                    env: ColumnValues) -> None:
    """Admit each closed table's template values into ``book`` under its column's record
    (:meth:`~derivgraph.column_layout.ColumnLayouts.admit`: where the value's own facts, read
    now, are the record's): a column ``env`` keeps whose rows the book holds under one record
    (:meth:`~derivgraph.column_layout.ColumnLayouts.common`), and a template value that the
    evaluation put in the dict (its own key: no column is put in) and that is no row of it.
    The book then answers for the template's tensors by their own record (a reader of a
    template value then its rows: :meth:`~derivgraph.column_layout.ColumnLayouts.common`'s
    template-first case) without a search of its fresh columns."""
    done: set[int] = set()
    for table in tables:
        for k, template in enumerate(table.template):
            rows = env.rows(table.column(k))
            value = _GET(env, template)
            if not rows or not isinstance(value, torch.Tensor) or id(value) in done \
                    or value is rows[0]:
                continue
            record = book.common(rows)
            if record is not None and book.admit(value, record):
                done.add(id(value))


def _record(book: ColumnLayouts, values: tuple[torch.Tensor, ...]) -> None:
    """Record the layout of one column's values: the slices of one tensor along dim 0 (so one
    dtype, device, shape and strides: the result's past its first dim), of one type where one
    sweep says so; plain strided tensors whose strides (the first slice's, read once) are the
    row-major ones of their shape are recorded contiguous (``contiguous=True``). The values
    are :func:`_column`'s, unbound just now (new tensors): a fresh column of the book."""
    types = set(map(type, values))
    if len(types) == 1:
        first, cls = values[0], types.pop()
        shape = first.shape
        row_major_slices = cls is torch.Tensor and first.layout is torch.strided \
            and first.stride() == row_major(shape)
        book.add(values, ColumnLayout(cls, first.dtype, shape, first.device,
                                      True if row_major_slices else None), fresh=True)


def _operands(env: dict[str, Any], read_source: Callable[[str], Any], refs: list[str],
              source: bool, sources: Mapping[str, Any] | None = None, column: bool = False,
              book: ColumnLayouts | None = None) -> Sequence[torch.Tensor] | None:
    """The values at ``refs`` (``source``: they are sources, one not read yet is read now),
    or None when one is not evaluated yet or is not a tensor. ``sources``: what
    ``read_source`` answers for the paths it holds. Every ref with a value in ``env``, or none
    and every one held in ``sources`` (read from it, put in ``env`` where all are tensors),
    takes a few C-level sweeps; any other mix, the per-ref loop (the reference: each source
    not read yet read by ``read_source`` and put in ``env`` up to the first non-tensor).
    ``column``: ``refs`` are a table's column (its rows' own nodes): a :class:`ColumnValues`
    keeps the sources read from ``sources`` as that column instead (:meth:`ColumnValues.keep`).
    ``book``: as :func:`_tensors`' (a column it holds is answered, and kept, as its own
    sequence)."""
    found = list(map(_GET, repeat(env), refs))  # a ColumnValues' own keys (no fill)
    if not any(map(is_, found, repeat(None))):
        return _tensors(found, book)
    if source and sources is not None and all(map(is_, found, repeat(None))):
        # read_source's answer for each held path (None: a path it does not hold, so not a
        # tensor: the per-ref loop below reads it as before)
        tensors = _tensors(list(map(sources.get, refs)), book)
        if tensors is not None:
            if column and type(env) is ColumnValues:
                env.keep(refs, tensors)
            else:
                env.update(zip(refs, tensors))
            return tensors
    out = []
    for ref in refs:
        value = _GET(env, ref)
        if value is None:
            if not source:
                return None
            value = env[ref] = read_source(ref)
        if not isinstance(value, torch.Tensor):
            return None
        out.append(value)
    return out


def _tensors(found: Sequence[Any], book: ColumnLayouts | None = None) \
        -> Sequence[torch.Tensor] | None:
    """``found`` (as a list) where every item is a tensor, else None. Where ``book`` holds
    ``found``'s very tensors as one recorded column
    (:meth:`~derivgraph.column_layout.ColumnLayouts.held`: one identity sweep, none for that
    column itself) whose record's class is a tensor class, that column: every item is of
    that class, so an instance of ``torch.Tensor`` (whose metaclass's ``isinstance`` is
    ``type``'s: a subclass's instance is one); its later readers (``book.common``, a stack's
    identity check, :func:`admit_templates`) then find the very sequence the book holds."""
    held = None if book is None or not _TYPE_CHECKS else book.held(found)
    if held is not None and issubclass(held[1].type, torch.Tensor):
        return held[0]
    if not all(map(isinstance, found, repeat(torch.Tensor))):
        return None
    return found if type(found) is list else list(found)


#: ``isinstance(x, torch.Tensor)`` is ``type``'s check (no ``__instancecheck__`` of torch's
#: metaclass): true for every instance of a subclass of ``torch.Tensor``
_TYPE_CHECKS = type(torch.Tensor).__instancecheck__ is type.__instancecheck__  # type: ignore[comparison-overlap]
