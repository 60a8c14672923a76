"""A template's graph calls compiled once, replayed per stamped layer with slot lookups.

:class:`~derivgraph.compiler.stamp.Stamper` replays a template's recorded graph calls on every
layer it stamps: each source and op renamed to the layer's paths, CSE looked up, the derived
tensors' inputs set. :class:`Replay` does the template-side work of that once: every node a
call names gets a *slot* (the layer's path from the template's relative path, or the node the
layer's own op call made), each op's arguments are split into the constant part (frozen once,
as :func:`~derivgraph.compiler.graph.freeze` gives it) and the slots of its node references,
so a layer costs a list of its paths, one tuple per argument list and one CSE lookup per op.
The program is a list of typed steps (:class:`SourceStep`, :class:`FlatStep`,
:class:`CallStep`); a source call that names a path made by an earlier one is no step (it
makes nothing), only a node the row names (:attr:`Replay.made_slots`).
A source the layer's probes found (``objects``: each probe gave the template's fact, which
holds the tensor's class, shape, stride, dtype and device) takes the template's layout
(``layouts``) for its node instead of reading it again: the facts being equal, so are the
layouts.
A replay touches nothing itself (:attr:`DerivedGraph.touched
<derivgraph.compiler.graph.DerivedGraph.touched>`): it reports each node it named that it did
not make (a path that was a node already, a CSE hit on an op made before it, a path it names
with no source call) and its caller touches those its row does not own.
:meth:`Replay.run_rows` replays a run of layers a step at a time over all of them, where
every node each layer's replay names is one it makes.
The result is exactly what the generic replay gives (same nodes, numbering, CSE hits and
twins): :meth:`DerivedGraph.op_keyed <derivgraph.compiler.graph.DerivedGraph.op_keyed>` is the
one CSE rule, fed the key :func:`freeze` would build.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from itertools import chain, repeat
from operator import is_not
from typing import Any, NamedTuple

import torch

from derivgraph.compiler.generated import define
from derivgraph.compiler.graph import (
    DerivedGraph,
    DerivedNode,
    NodeRef,
    freeze,
    refs_in,
    substitute,
)
from derivgraph.compiler.ir import HeldColumn, NodeKind, row_users
from derivgraph.compiler.reads import Call, SourceCall
from derivgraph.paths import get_path

__all__ = ["CallStep", "FlatStep", "Replay", "SourceStep", "Step", "Twins"]

_SOURCE, _OP = NodeKind.SOURCE, NodeKind.OP

#: kwarg values copied as they are (immutable, no node inside)
_PLAIN = frozenset({int, str, bool, type(None), float, torch.device, torch.dtype})


def _flat(args: Any) -> bool:
    """A tuple of node references and immutable constants (no nesting)."""
    return type(args) is tuple and all(type(v) is NodeRef or type(v) in _PLAIN for v in args)


def _plain_kwargs(kwargs: Any) -> bool:
    return type(kwargs) is dict and all(type(v) in _PLAIN for v in kwargs.values())


class SourceStep(NamedTuple):
    """Make the layer's source in path slot ``slot`` (``rel``: the template's path from the
    module, ``parts`` its parts; ``layout``: the layout the template's probes proved of it,
    None when they proved none)."""

    slot: int
    parts: tuple[str, ...]
    rel: str
    layout: tuple[Any, ...] | None


class FlatStep(NamedTuple):
    """An op call whose arguments are node references and immutable constants (no nesting)
    and whose kwargs are constants: per argument ``(slot, None)`` for a node, ``(-1, value)``
    for a constant (``keyed``: the same with the constant frozen); ``order``: the slots of
    the node arguments; the node goes to slot ``out`` (``result``: the template's)."""

    name: str
    parts: tuple[tuple[int, Any], ...]
    keyed: tuple[tuple[int, Any], ...]
    kwargs: dict[str, Any]
    frozen_kwargs: Any
    order: tuple[int, ...]
    out: int
    result: str


class CallStep(NamedTuple):
    """Any other op call: its arguments with every node reference (an id of ``resolved``)
    replaced by the slot's node, then frozen for the CSE key."""

    name: str
    args: Any
    kwargs: Any
    resolved: dict[str, int]
    out: int
    result: str


#: one step of a replay program
Step = SourceStep | FlatStep | CallStep


class Replay:
    """The template's calls as slot operations (built once per template).

    Slots ``0 .. len(rels) - 1`` hold the layer's path of each relative path in :attr:`rels`;
    the others hold what the layer's op calls give (or, for a call with no node argument, the
    template's own CSE node). :attr:`made_slots`: the slot of each call that names a node of
    the layer (every source call, every op call with a node argument), in call order.
    """

    def __init__(self, relative: Callable[[str], str | None], calls: list[Call],
                 inputs: list[str | None],
                 layouts: dict[tuple[str, ...], tuple[Any, ...]] | None = None,
                 derived: tuple[str, ...] = ()):
        proved = layouts or {}  # the source layouts the template's probes proved
        rel_slot: dict[str, int] = {}
        op_slot: dict[str, int] = {}
        self.rels: list[str] = []

        def rel(path: str) -> int:
            slot = rel_slot.get(path)
            if slot is None:
                slot = rel_slot[path] = len(self.rels)
                self.rels.append(path)
            return slot

        def node(node_id: str) -> int | str:
            """An op result's name (resolved to a slot below) or a path's slot."""
            if node_id in op_slot:
                return node_id
            found = relative(node_id)
            assert found is not None  # checked by stamp._replayable when the template was kept
            return rel(found)

        raw: list[Any] = []  # source steps, and (op call, its references' slots or names)
        made: list[int | str] = []  # each call's node that names a node of the layer
        self.hits = 0  # calls with no node argument: CSE hits on the template's node
        seen: set[int] = set()  # path slots a source call made (a later call finds it)
        constants: list[str] = []  # op results of calls with no node argument
        for call in calls:
            if type(call) is SourceCall:
                slot = rel(call.rel)
                made.append(slot)
                if slot not in seen:  # graph.source is idempotent: a later call only names it
                    parts = tuple(call.rel.split("."))
                    raw.append(SourceStep(slot, parts, call.rel, proved.get(parts)))
                    seen.add(slot)
                continue
            refs = list(dict.fromkeys(refs_in(call.args) + refs_in(call.kwargs)))
            if not refs:
                self.hits += 1
                op_slot[call.result] = -1
                constants.append(call.result)
                continue
            slots = {r: node(r) for r in refs}  # before its own result is an op slot
            op_slot[call.result] = -1
            made.append(call.result)
            raw.append((call, slots))
        found_inputs = [None if v is None else node(v) for v in inputs]
        # op slots after the path slots
        base = len(self.rels)
        for i, op_id in enumerate(op_slot):
            op_slot[op_id] = base + i
        self.size = base + len(op_slot)
        #: the op slots' initial values: the template's CSE node for a constant, else None
        self.tail: list[str | None] = [None] * len(op_slot)
        for result in constants:
            self.tail[op_slot[result] - base] = result
        #: per path slot, what follows the layer's module path ("." + the relative path)
        self.suffixes = ["." + r if r else "" for r in self.rels]

        def slot_of(found: int | str) -> int:
            return op_slot[found] if isinstance(found, str) else found

        self.made_slots = [slot_of(m) for m in made]
        self.steps: list[Step] = []
        for item in raw:
            if type(item) is SourceStep:
                self.steps.append(item)
                continue
            call, slots = item
            name, args, kwargs, result = call
            resolved = {r: slot_of(s) for r, s in slots.items()}
            if _flat(args) and _plain_kwargs(kwargs):
                parts = tuple((resolved[v.id], None) if type(v) is NodeRef else (-1, v)
                              for v in args)
                keyed = tuple((s, None if s >= 0 else freeze(v)) for s, v in parts)
                order = tuple(resolved[v.id] for v in args if type(v) is NodeRef)
                self.steps.append(FlatStep(name, parts, keyed, dict(kwargs), freeze(kwargs),
                                           order, op_slot[result], result))
            else:
                self.steps.append(CallStep(name, args, kwargs, resolved, op_slot[result],
                                           result))
        self.inputs = [None if v is None else slot_of(v) for v in found_inputs]
        named = {step.slot for step in self.steps if type(step) is SourceStep}
        mine = {relative(d): i for i, d in enumerate(derived)}  # ``derived``: the template's
        # path slots no source call names (a derived tensor named by its name, an input):
        # the layer's own derived tensor at that position of its own (checked per layer), or
        # another node
        self.own_refs = [(s, mine[r]) for s, r in enumerate(self.rels)
                         if s not in named and r in mine]
        self.unnamed = [s for s, r in enumerate(self.rels) if s not in named and r not in mine]
        self.op_slots = [step.out for step in self.steps if type(step) is not SourceStep]
        #: each step's slot (the node it names), and per slot a :class:`FlatStep` reads, the
        #: slots of the flat steps reading it, in step order, each once: its node's users
        #: on a layer whose replay makes every node it names (:meth:`run_rows`)
        self._outs = [step.slot if type(step) is SourceStep else step.out
                      for step in self.steps]
        self._readers: dict[int, list[int]] = {}
        for step in self.steps:
            if type(step) is FlatStep:
                for slot in dict.fromkeys(step.order):
                    self._readers.setdefault(slot, []).append(step.out)
        #: :attr:`steps` as one function (made at the first run: :func:`_compile_steps`)
        self._steps: Callable[..., None] | None = None
        #: whether :meth:`run_rows` may replay by columns (:meth:`_by_columns`, set at first)
        self._columns: bool | None = None

    def template_nodes(self, module_path: str) -> list[str | None]:
        """Every slot's node on the template's own layer (at ``module_path``): its paths,
        and the op nodes its calls gave."""
        ops: list[str | None] = list(self.tail)
        base = len(self.rels)
        for step in self.steps:
            if type(step) is not SourceStep:
                ops[step.out - base] = step.result
        return [module_path + s for s in self.suffixes] + ops

    def run(self, graph: DerivedGraph, module_path: str, module: Any,
            objects: dict[tuple[str, ...], Any], twins: dict[str, str],
            derived: list[str], found: list[str],
            read: list[str] | None = None) -> list[Any]:
        """Replay on the layer at ``module_path`` (``derived``: its derived tensors, in the
        template's order): every slot's node (each call's: :attr:`made_slots`). Appends to
        ``found`` every node it named and did not make, but for its own derived tensors
        named by their names, and to ``read`` every source it made with a layout read from
        the tensor where the template's probes proved one (its tensor not among
        ``objects``)."""
        vals: list[Any] = [module_path + s for s in self.suffixes]
        if self.unnamed:
            found.extend([vals[s] for s in self.unnamed])
        if self.own_refs:
            found.extend([vals[s] for s, i in self.own_refs if vals[s] != derived[i]])
        vals += self.tail
        start, hits = graph.op_count(), graph.cse_hits  # the ops numbered above start: its own
        graph.cse_hits += self.hits
        steps = self._steps
        if steps is None:
            steps = self._steps = _compile_steps(self.steps)
        steps(vals, objects, module, twins, found, read, graph.op_keyed, graph.place_source,
              get_path, NodeRef)
        if graph.cse_hits != hits + self.hits:  # an op call hit: on an op made before it?
            found.extend([vals[s] for s in self.op_slots if not graph.made_after(vals[s], start)])
        return vals


    def _by_columns(self) -> bool:
        """Whether a layer's replay makes a new node at every step when its sources are new:
        every step a source whose layout the template proved, or a :class:`FlatStep` whose
        node arguments are all nodes the layer's earlier steps made, no two of those with
        one key over slots; no path slot that no source call names."""
        if self.unnamed or self.own_refs:
            return False
        made: set[int] = set()
        keys: set[Any] = set()
        for step in self.steps:
            if type(step) is SourceStep and step.layout is not None:
                made.add(step.slot)
                continue
            if type(step) is not FlatStep:
                return False
            refs = {s for s, _ in step.parts if s >= 0}
            if not refs or not refs <= made:
                return False
            try:
                keys.add((step.name, step.keyed, step.frozen_kwargs))
            except TypeError:
                return False
            made.add(step.out)
        return len(keys) == len(self.op_slots)

    def made(self) -> set[int]:
        """The slots whose node a layer's replay makes (each step's), on a layer replayed
        by :meth:`run_rows`."""
        return set(self._outs)

    def run_rows(self, graph: DerivedGraph, paths: list[str],
                 objects: Mapping[tuple[str, ...], list[Any]],
                 twins: Twins,
                 derived: Sequence[tuple[int, list[DerivedNode], list[str]]] = ()
                 ) -> list[list[Any]] | None:
        """:meth:`run` on the layers at ``paths`` one after the other (``objects``: per
        path probe's parts, the object it found on each layer: their proven objects), made
        a step at a time over every layer and added in the order the row replays add them:
        every slot's column (each layer's node). Only where each row's replay would make
        every node it names (:meth:`_by_columns`, every source's tensor among its objects,
        no source path a node yet): then no source is read, no CSE
        lookup hits but the template's constants', nothing is found, and each node's users
        are its own layer's ops that read it (:attr:`_readers`, built per column). With
        ``derived`` (per derived tensor of the row, in the order its replay places them: a
        slot of :meth:`made`, that tensor on every layer and their ids, none with an input
        yet), each
        tensor's input is set to its slot's node and named last in that node's users, as
        :meth:`DerivedGraph.place_input_each
        <derivgraph.compiler.graph.DerivedGraph.place_input_each>` after each row leaves it.
        Each source column's tensors and layout go to :attr:`DerivedGraph.proven_sources
        <derivgraph.compiler.graph.DerivedGraph.proven_sources>`. None (nothing done) else."""
        if self._columns is None:
            self._columns = self._by_columns()
        if not self._columns:
            return None
        placed = [(slot, ids) for slot, _, ids in derived]
        if not all(graph.ir.without_inputs(ids) for _, ids in placed):
            return None
        n, width, start = len(paths), len(self.op_slots), graph.op_count()
        row_ids = graph.row_ids  # the rule of row ids; the columns kept for the check
        cols: list[list[Any]] = row_ids.keep_paths(paths, self.suffixes)
        cols += [[value] * n for value in self.tail]
        sources: list[list[tuple[str, Any]]] = []
        ops: list[_OpColumn] = []  # per op step, what its nodes' CSE keys are made of
        fresh: list[str] = []
        k = 0
        for step in self.steps:
            if type(step) is SourceStep:
                tensors = objects.get(step.parts)
                if tensors is None or not all(map(is_not, tensors, repeat(None))):
                    return None
                fresh += cols[step.slot]
                sources.append(list(zip(cols[step.slot], tensors)))
            else:
                k += 1
                name = step.name  # each row's op id as DerivedGraph.op_keyed writes it
                cols[step.out] = row_ids.ops(range(start + k, start + n * width + 1, width),
                                             name, keep=True)
                fresh += cols[step.out]
        fresh_set = set(fresh)  # kept: the held run's set of ids (Nodes.hold)
        if not graph.is_fresh(fresh, fresh_set):
            return None
        readers = self._readers
        columns: list[HeldColumn] = []  # per step, its column
        for step in self.steps:
            if type(step) is SourceStep:
                _, shape, stride, dtype, device = step.layout
                column = HeldColumn(cols[step.slot], partial(
                    _source_fields, shape, stride, dtype, device))
                column.hold(_SOURCE, None)  # its nodes held by the graph (Nodes.hold)
                slot = step.slot
            else:
                assert type(step) is FlatStep  # _by_columns: at least one node argument
                name, parts, keyed, kwargs, fkw, order, out, result = step
                ids = cols[out]
                column = HeldColumn(ids, partial(
                    _op_fields, name, [(cols[s] if s >= 0 else None, v) for s, v in parts],
                    kwargs, [cols[s] for s in dict.fromkeys(order)]))
                column.hold(_OP, name)
                ops.append((name, keyed, fkw, [cols[s] if f is None else None
                                               for s, f in keyed], ids))
                slot = out
            # its users: the layer's ops that read it, in step order (each layer's own),
            # then the derived tensors it is the input of, in the order they are placed;
            # held by the column, each row's list made on first use
            reading = [cols[u] for u in readers.get(slot, ())]
            reading += [ids for at, ids in placed if at == slot]
            column.users = partial(row_users, reading)
            columns.append(column)
        by_rows = chain.from_iterable
        graph.add_made(list(by_rows(zip(*[cols[s] for s in self._outs]))),
                       None, columns,  # the nodes: the columns' rows, held
                       list(by_rows(zip(*sources))), len(ops) * n,
                       {step.name for step in self.steps if type(step) is FlatStep},
                       partial(_op_keys, ops, n),  # made when the CSE table is next read
                       fresh_set)
        twins.hold(start + 1, start + n * width,  # the run's op numbers
                   partial(_run_twins, [(list(cols[step.out]), step.result)
                                        for step in self.steps if type(step) is FlatStep]))
        graph.cse_hits += self.hits * n
        # each source column's tensors: the proof found each with the template's layout
        graph.proven_sources += [(objects[step.parts], step.layout) for step in self.steps
                                 if type(step) is SourceStep]
        for slot, column, ids in derived:
            graph.place_made_inputs(column, ids, cols[slot])
        return cols


def _run_twins(ops: list[tuple[list[str], str]]) -> Iterable[tuple[str, str]]:
    """A column run's twins (:meth:`Replay.run_rows`), row by row as its rows' replays
    write them: each op column's node -> the template's op it copies (``ops``: each op
    step's column of ids and its template op)."""
    return chain.from_iterable(zip(*[zip(ids, repeat(result)) for ids, result in ops]))


class Twins(dict[str, str]):
    """Each stamped op node -> the template's op it copies, as the replays write it: a
    layer's replay writes the dict; a column run (:meth:`Replay.run_rows`) is held as its
    op numbers and the maker of its pairs (:meth:`hold`), its pairs put in the dict when an
    id that may be one of its ops is first looked up (:meth:`finder`). A run's ops are new
    nodes, so no key written before it is one of them; a key written after it wins over
    the run's pair, as it would have over the run's write."""

    __slots__ = ("_held",)

    def __init__(self) -> None:
        super().__init__()
        #: the held runs: (first op number, last op number, their pairs' maker)
        self._held: list[tuple[int, int, Callable[[], Iterable[tuple[str, str]]]]] = []

    def hold(self, first: int, last: int,
             pairs: Callable[[], Iterable[tuple[str, str]]]) -> None:
        """Hold a run's twins: ``pairs()`` gives them, each key an op numbered ``first`` to
        ``last``, none a key yet."""
        self._held.append((first, last, pairs))

    def finder(self) -> Callable[[str], str | None]:
        """The lookup of a node's twin (``dict.get`` where no run is held)."""
        return self._find if self._held else self.get

    def _find(self, node_id: str) -> str | None:
        """``node_id``'s twin: the dict's, else, where its number is a held run's, that
        run's pairs put in the dict (keys written since kept) and then the dict's."""
        found = self.get(node_id)
        if found is None and self._held and node_id[:1] == "%":
            digits = node_id[1:node_id.find(":")]
            number = int(digits) if digits.isdecimal() else None
            for run in [r for r in self._held if number is not None and r[0] <= number <= r[1]]:
                self._held.remove(run)
                dict.update(self, [(k, v) for k, v in run[2]() if k not in self])
                found = self.get(node_id)
        return found

    def settle(self) -> None:
        """Put every held run's pairs in the dict, runs in the order they were held."""
        held, self._held = self._held, []
        for _, _, pairs in held:
            dict.update(self, [(k, v) for k, v in pairs() if k not in self])


def _source_fields(shape: tuple[int, ...], stride: tuple[int, ...], dtype: Any, device: Any,
                   row: int) -> tuple[Any, ...]:
    """A column-replayed source node's fields after its id (each row's the same): what
    :meth:`DerivedGraph.place_source <derivgraph.compiler.graph.DerivedGraph.place_source>`
    gives it with its template's proven layout."""
    return (_SOURCE, None, (), {}, (), shape, stride, dtype, device)


def _op_fields(name: str, parts: list[tuple[list[str] | None, Any]], kwargs: Any,
               inputs: list[list[str]], row: int) -> tuple[Any, ...]:
    """Row ``row``'s node of a column-replayed op step, its fields after its id: its
    arguments (per part, a node's column or None and the constant), a copy of the step's
    keyword arguments, its inputs (the columns of its distinct node arguments, first use
    first), as the row's replay gives them (:meth:`DerivedGraph.op_keyed
    <derivgraph.compiler.graph.DerivedGraph.op_keyed>`)."""
    return (_OP, name, tuple([v if col is None else NodeRef(col[row]) for col, v in parts]),
            dict(kwargs), tuple([col[row] for col in inputs]), (), (), None, None)


#: an op step of a column-replayed run: its name, keyed parts, frozen kwargs, per keyed part
#: the column of its node on every layer (None: a constant), and the step's node per layer
_OpColumn = tuple[str, tuple[tuple[int, Any], ...], Any, list[list[str] | None], list[str]]


def _op_keys(ops: list[_OpColumn], n: int) -> Iterable[tuple[Any, str]]:
    """The CSE key of every op node of a column-replayed run of ``n`` layers, with its id,
    in the order the row replays add them (a layer's ops in step order, layer after
    layer): each key what :func:`~derivgraph.compiler.graph.freeze` gives its call, as the
    row replay's (:func:`_compile_steps`) is written."""
    per_step = []
    for name, keyed, fkw, refs, ids in ops:
        seq = zip(*[zip(repeat("ref"), col) if col is not None else repeat(f, n)
                    for (_, f), col in zip(keyed, refs, strict=True)])
        per_step.append(zip(zip(repeat(name), zip(repeat("seq"), seq), repeat(fkw)), ids))
    return chain.from_iterable(zip(*per_step))


def _compile_steps(steps: list[Step]) -> Callable[..., None]:
    """``steps`` as one straight-line function of ``(vals, objects, module, twins, found,
    read, op_keyed, place, get_path, NodeRef)``: each step what :meth:`Replay.run` would do
    for it, the template's constants (names, parts, frozen keys, layouts) bound once, a
    :class:`FlatStep`'s argument tuple, CSE key and refs written out for its slots; a
    :class:`CallStep` is :func:`_call_step`."""
    consts: list[Any] = []

    def const(value: Any) -> str:
        consts.append(value)
        return f"_c{len(consts) - 1}"

    def at(slot: int) -> str:  # a slot number is all of a step that is written as text
        if type(slot) is not int:
            raise TypeError(f"a replay slot must be an int, not {type(slot).__name__}")
        return str(slot)

    def tup(items: list[str]) -> str:
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"

    body: list[str] = []
    for step in steps:
        if type(step) is FlatStep:
            name, parts, keyed, kwargs, fkw, order, out, result = step
            for slot in dict.fromkeys(s for s, _ in parts if s >= 0):
                body.append(f"v{at(slot)} = vals[{at(slot)}]")
            args = tup([f"NodeRef(v{at(s)})" if s >= 0 else const(v) for s, v in parts])
            key = tup([f"('ref', v{at(s)})" if f is None else const(f) for s, f in keyed])
            n, r = const(name), const(result)
            kw = f"dict({const(kwargs)})" if kwargs else "{}"
            refs = ", ".join(f"v{at(s)}" for s in order)
            body += [f"new = op_keyed({n}, {args}, {kw}, ({n}, ('seq', {key}), {const(fkw)}), "
                     f"[{refs}])",
                     f"vals[{at(out)}] = new",
                     f"if new != {r}:",
                     f"    twins[new] = {r}"]
        elif type(step) is SourceStep:
            slot, parts, rel, layout = step
            body += [f"tensor, layout = objects.get({const(parts)}), {const(layout)}",
                     "if tensor is None:",
                     "    if layout is not None and read is not None:",
                     f"        read.append(vals[{at(slot)}])",
                     f"    tensor, layout = get_path(module, {const(rel)}), None",
                     f"path = vals[{at(slot)}]",
                     "if place(path, tensor, layout):",
                     "    found.append(path)"]
        else:
            body.append(f"_call_step({const(step)}, vals, op_keyed, twins)")
    src = "\n".join(
        ["def steps(vals, objects, module, twins, found, read, op_keyed, place, get_path, "
         "NodeRef):"] + [f"    {line}" for line in body or ["pass"]]) + "\n"
    scope: dict[str, Any] = {f"_c{i}": value for i, value in enumerate(consts)}
    scope["_call_step"] = _call_step
    return define(src, "replay", scope, "steps")


def _call_step(step: CallStep, vals: list[Any], op_keyed: Callable[..., str],
               twins: dict[str, str]) -> None:
    """Any other op call: its arguments with every node reference replaced by its slot's
    node, frozen for the CSE key."""
    name, args, kwargs, resolved, out, result = step

    def lookup(node_id: str) -> NodeRef:
        return NodeRef(vals[resolved[node_id]])

    args, kwargs = substitute(args, lookup), substitute(kwargs, lookup)
    new = op_keyed(name, args, kwargs, (name, freeze(args), freeze(kwargs)),
                   refs_in(args) + refs_in(kwargs))
    vals[out] = new
    if new != result:
        twins[new] = result
