"""Stamped layers past resolution: which layers are provably their template's nodes renamed.

:mod:`derivgraph.compiler.stamp` records, per template, an instance table
(:class:`~derivgraph.compiler.instances.InstanceTable`): a row per stamped layer, its own nodes
(its derived tensors, then every node its replayed calls made) position by position with the
template's. A later phase may reuse a template's decision for a row only when the layer's
subgraph is the template's renamed, with nothing else attached to it. :func:`closed_layers`
proves that once per graph version, column by column over each table:

* the template is *closed*: every input of its nodes is its own or a shared constant (an op
  with no inputs, made once by CSE for every layer), every user of its nodes is its own, and
  every derived tensor has an input (no engine-computed value);
* the row is what its replay made: its recorded ids are the ones its module path and op
  count give, its derived tensors' values the row's nodes its template's read
  (:func:`~derivgraph.compiler.instances.consistent_rows`; a row that is not, and not open,
  is a stamper bug: DG013); a table with no record is proven from its nodes
  (:func:`~derivgraph.compiler.instances.aligned_rows`: each node has the template node's kind
  and op and reads the row's nodes at the template's input positions, and they are
  distinct): so the row's edges are the template's renamed;
* the row is not *open*: no graph call from outside it named one of its nodes
  (:attr:`DerivedGraph.touched <derivgraph.compiler.graph.DerivedGraph.touched>`: another
  spec's formula reading its derived tensor or its source, sharing its op through CSE or
  making an op over one of its nodes, or another row's replay finding its node), before or
  after its replay. Every edge of the graph is made by such a call or by the row's own
  replay, so no node outside the layer reads one of its nodes.

What else a phase reads per layer (layouts, storage, addresses) it checks itself
(:mod:`derivgraph.compiler.infer`, :mod:`derivgraph.compiler.lower`). :func:`row_blocks` gives
the topological order's walk of each such row from its template's.
"""

from __future__ import annotations

from itertools import chain, filterfalse
from operator import itemgetter, sub

from derivgraph.compiler.graph import DerivedGraph
from derivgraph.compiler.instances import (
    InstanceTable,
    Recipe,
    aligned_rows,
    consistent_rows,
    row_mismatch,
    row_recipe,
)
from derivgraph.compiler.ir import Node, NodeKind, depth_first
from derivgraph.errors import Rule, SourceLocation, SpecIssue, SpecValidationError

__all__ = ["Span", "closed_layers", "layer_nodes", "open_rows", "row_blocks"]


def closed_layers(graph: DerivedGraph) -> list[InstanceTable]:
    """Per template whose subgraph is closed: the table of its stamped rows whose subgraph is
    the template's renamed, and nothing else's (tables left with no row are dropped)."""
    version, found = graph.layer_cache
    if version == graph.ir.version and found is not None:
        return found
    nodes, touched = graph.nodes, graph.touched
    found = []
    for table in graph.stamps:
        template = table.template
        if not template or not table.rows or not _closed(graph, template):
            continue  # nothing of its own (folds only), or not closed
        opened = open_rows(touched, table) if touched else [False] * len(table.rows)
        recipe = row_recipe(table, graph.derived_view)
        if recipe is None:  # no record: the rows' nodes proven against the template's
            size = len(template)
            keep = [ok and len(set(row)) == size
                    for ok, row in zip(aligned_rows(nodes, table), table.rows)]
        else:  # a recorded row is what its replay made, unless it is open
            keep = consistent_rows(table, recipe, graph.derived_view, graph.run_nodes,
                                   graph.row_ids)
            if not all(keep):
                _raise_inconsistent(graph, table, recipe, keep, opened)
        if any(opened):  # an open row is not closed (no row open: keep as it is)
            keep = [ok and not o for ok, o in zip(keep, opened)]
        closed = table if all(keep) else table.subset(keep)
        if closed.rows:
            found.append(closed)
    graph.layer_cache = (graph.ir.version, found)
    return found


def _raise_inconsistent(graph: DerivedGraph, table: InstanceTable, recipe: list[Recipe],
                        keep: list[bool], opened: list[bool]) -> None:
    """The DG013 error for the first row that is not open and is not what its record gives
    (a stamper bug: the row's record is what every row reader trusts)."""
    for i, (ok, o) in enumerate(zip(keep, opened)):
        if ok or o:
            continue
        what, node = row_mismatch(table, recipe, graph.derived, i)
        raise SpecValidationError([SpecIssue(
            Rule.INFERENCE, f"the stamped row of {table.prefixes[i]} {what}, not what its "
            "replay made", "report this as a derivgraph bug; DERIVGRAPH_STAMP=0 compiles each "
            "layer on its own", SourceLocation(), node)])


def open_rows(touched: set[str], table: InstanceTable) -> list[bool]:
    """Per row of ``table``: whether one of its nodes is in ``touched`` (one C-level test
    over every row, then a column at a time; row by row only for a column some touched node
    is in)."""
    opened = [False] * len(table.rows)
    if touched.isdisjoint(table.ids()):
        return opened
    for k in range(len(table.template)):
        column = table.column(k)
        if not touched.isdisjoint(column):
            opened = [o or n in touched for o, n in zip(opened, column)]
    return opened


def _closed(graph: DerivedGraph, template: tuple[str, ...]) -> bool:
    """Whether every input of the template's nodes is its own or a shared constant, every
    user its own, and every derived tensor has an input."""
    own, nodes, users, derived = set(template), graph.nodes, graph.ir.users, graph.derived_view
    for node_id in template:
        node = nodes[node_id]
        if node.kind is NodeKind.DERIVED and derived[node_id].input is None:
            return False
        for ref in node.inputs:
            if ref not in own and (nodes[ref].kind is not NodeKind.OP or nodes[ref].inputs):
                return False
        if any(u not in own for u in users[node_id]):
            return False
    return True


def layer_nodes(tables: list[InstanceTable]) -> set[str]:
    """Every node of every row of ``tables`` (one set, built from the rows as they are)."""
    return set(chain.from_iterable(table.ids() for table in tables))


def order_without_rows(graph: DerivedGraph, tables: list[InstanceTable]) -> list[str]:
    """The graph's order without every node of ``tables``' rows: cut at the order's spans
    where they are these tables' (:meth:`DerivedGraph.unspanned
    <derivgraph.compiler.graph.DerivedGraph.unspanned>`), else filtered by
    :func:`layer_nodes`; the order itself where there are no tables."""
    if not tables:
        return graph.ordered()
    rest = graph.unspanned(tables)
    if rest is None:
        rest = list(filterfalse(layer_nodes(tables).__contains__, graph.ordered()))
    return rest


#: a stretch of the graph's insertion order (``start``, ``stop``) and what the topological walk
#: emits for it, in order (None: nothing; its nodes are emitted with another span)
Span = tuple[int, int, list[str] | None]


def row_blocks(graph: DerivedGraph, tables: list[InstanceTable],
               spans: list[Span] | None = None) -> dict[str, tuple[str, ...]]:
    """Per row of ``tables`` (closed rows, :func:`closed_layers`): its first derived tensor ->
    the row's nodes in the order the topological walk (:meth:`Graph.order
    <derivgraph.compiler.ir.Graph.order>`) emits them, its template's walk renamed.

    Every derived tensor is inserted before any source or op (:func:`build_graph
    <derivgraph.compiler.build.build_graph>`), and nothing outside a closed row reads one of
    its nodes; so where the row's derived tensors were inserted one after another in its
    order (checked here), the walk reaches the row first at its first derived tensor and,
    through its derived tensors in turn, emits exactly what it emits for the template (the
    shared constants, leaves, were emitted with the template). Only for a template whose
    derived tensors reach all its nodes (else a node would be emitted later, as a root of
    its own). Were either proof wrong, :meth:`DerivedGraph.source_deps
    <derivgraph.compiler.graph.DerivedGraph.source_deps>`, whose sweep reads every input
    before its user, refuses the order (DG013).

    ``spans`` (given: appended to): a table whose rows' leading derived tensors were
    inserted as one stretch, row after row in its order, and its rows' other nodes as
    another (a run replayed by columns) gives no block but those two :data:`Span`: the walk
    emits every row's block, in row order, at the first stretch (it reaches nothing else
    there: every node of it is a row's first derived tensor or one its block emitted) and
    nothing at the second (:func:`_run_spans`)."""
    blocks: dict[str, tuple[str, ...]] = {}
    where: dict[str, int] | None = None  # derived tensor -> its insertion position
    keys: list[str] | None = None  # every node, in insertion order
    for table in tables:
        walk, lead = _template_walk(graph, table.template)
        if walk is None:
            continue
        if spans is not None:
            if keys is None:
                keys = list(graph.nodes)
            found = _run_spans(keys, table, walk, lead)
            if found is not None:
                spans += found
                continue
        if where is None:
            where = {n: i for i, n in enumerate(graph.derived_ids)}
        rows = _inserted_in_order(where, table.rows, lead)
        pick = itemgetter(*walk)
        if len(walk) == 1:
            blocks.update((row[0], (pick(row),)) for row in rows)
        else:
            blocks.update((row[0], pick(row)) for row in rows)
    return blocks


def _run_spans(keys: list[str], table: InstanceTable, walk: list[int],
               lead: int) -> list[Span] | None:
    """The two spans of ``table``'s rows (its template's walk ``walk`` leading with
    ``lead`` derived tensors), when ``keys`` (the insertion order) holds every row's
    leading derived tensors as one stretch, row after row, and every row's other nodes as
    another, row after row (one C-level comparison each); None else."""
    heads = table.ids_at(0, lead)  # row by row, from the columns
    rest = table.ids_at(lead, len(table.cols))
    try:
        i = keys.index(heads[0])
        j = keys.index(rest[0]) if rest else i + len(heads)
    except ValueError:
        return None
    if keys[i:i + len(heads)] != heads or keys[j:j + len(rest)] != rest:
        return None
    columns = table.columns()
    emit = list(chain.from_iterable(zip(*[columns[k] for k in walk])))
    return [(i, i + len(heads), emit), (j, j + len(rest), None)] if rest else \
        [(i, i + len(heads), emit)]


def _inserted_in_order(where: dict[str, int], rows: list[tuple[str, ...]],
                       lead: int) -> list[tuple[str, ...]]:
    """The rows whose first ``lead`` nodes were inserted one after another, in that order
    (one C-level sweep per column; row by row only where one differs)."""
    first = list(map(where.__getitem__, [row[0] for row in rows]))
    n = len(rows)
    if all(list(map(sub, map(where.get, [row[k] for row in rows]), first)) == [k] * n
           for k in range(1, lead)):
        return rows
    return [row for row in rows
            if [where.get(row[k], -1) - where[row[0]] for k in range(lead)] == list(range(lead))]


def _template_walk(graph: DerivedGraph, template: tuple[str, ...],
                   ) -> tuple[list[int] | None, int]:
    """The template's positions in the order the walk from its leading derived tensors
    emits them (inputs from outside it counted as emitted; None when it leads with no
    derived tensor, does not reach all its nodes, or holds a cycle), and how many derived
    tensors it leads with."""
    nodes, derived = graph.nodes, graph.derived_ids
    lead = next((i for i, n in enumerate(template) if n not in derived), len(template))
    if not lead:
        return None, lead
    own = {n: i for i, n in enumerate(template)}
    mine: dict[str, Node] = {n: nodes[n] for n in template}
    state = {ref: 2 for node in mine.values() for ref in node.inputs if ref not in own}
    order: list[str] = []
    try:
        for root in template[:lead]:
            if root not in state:
                depth_first(root, mine, state, order)
    except (ValueError, KeyError):  # a cycle, or an input outside it not counted above
        return None, lead
    if len(order) != len(template):
        return None, lead
    return [own[n] for n in order], lead
