"""The compile's batched sweeps give what the one-at-a-time rule gives.

Each sweep is checked against the rule it replaces, written out here as the reference: the
graph's topological order (leaves first, one iterator per open node), paths read through each
owner once (:class:`~derivgraph.compiler.owners.PathReader`), the bit check of the first pass
in concatenations, the scheduler's storage addresses read in one sweep, and operand lists
named in one sweep. Canaries show each comparison goes red on a planted difference.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
import torch
from torch import nn

from derivgraph import compile_plan, load_specs
from derivgraph.compare import bits_equal
from derivgraph.compiler import codegen, schedule
from derivgraph.compiler.ir import Graph, Node, NodeKind
from derivgraph.compiler.owners import PathReader, child
from derivgraph.paths import MISSING, get_path, step_into
from derivgraph.planner import _bits_equal_all
from derivgraph.spec.kinds import TensorKind
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
from derivgraph.tools.deepseek_workload import DeepseekModel, deepseek_specs
from derivgraph.tools.reference_models import (
    RefConfig,
    build_reference_model,
    make_weights,
    reference_spec_path,
)

# ---- topological order ---------------------------------------------------------------------


def _reference_order(graph: Graph) -> list[str]:
    """Depth-first, inputs first, roots in insertion order (recursive: the definition)."""
    done: set[str] = set()
    order: list[str] = []

    def visit(node_id: str) -> None:
        if node_id in done:
            return
        done.add(node_id)
        for ref in graph.nodes[node_id].inputs:
            visit(ref)
        order.append(node_id)

    for node_id in graph.nodes:
        visit(node_id)
    return order


def _random_dag(seed: int, size: int = 60) -> Graph:
    rng = random.Random(seed)
    names = [f"n{i}" for i in range(size)]
    inputs = {n: tuple(rng.sample(names[:i], min(i, rng.randint(0, 3))))
              for i, n in enumerate(names)}
    graph = Graph()
    for n in rng.sample(names, size):  # inserted in another order than the dependencies
        graph.add(Node(n, NodeKind.OP if inputs[n] else NodeKind.SOURCE, inputs=inputs[n]))
    return graph


@pytest.mark.parametrize("seed", range(8))
def test_order_is_the_depth_first_definition(seed: int) -> None:
    graph = _random_dag(seed)
    assert graph.order() == _reference_order(graph)


def test_canary_another_valid_order_is_told_apart() -> None:
    """A topological order that is not the deterministic one (sorted by depth) differs."""
    graph = _random_dag(0)
    depth: dict[str, int] = {}
    for n in _reference_order(graph):
        depth[n] = 1 + max((depth[r] for r in graph.nodes[n].inputs), default=-1)
    by_depth = sorted(graph.nodes, key=lambda n: (depth[n], n))
    assert by_depth != graph.order()


def test_order_names_the_node_that_closes_a_cycle() -> None:
    graph = Graph()
    for n, inputs in (("a", ("c",)), ("b", ("a",)), ("c", ("b",)), ("d", ("d",))):
        graph.add(Node(n, NodeKind.OP, inputs=inputs))
    with pytest.raises(ValueError, match="cycle through a"):
        graph.order()
    graph.nodes.pop("a"), graph.nodes.pop("b"), graph.nodes.pop("c")
    graph.version += 1
    with pytest.raises(ValueError, match="cycle through d"):
        graph.order()


# ---- paths read through their owners -------------------------------------------------------


class _Holder:
    def __init__(self) -> None:
        self.cfg = {"k": 3, "0": "zero"}
        self.none = None
        self.items = [torch.ones(1), (torch.zeros(2),)]


class _Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.ones(2), requires_grad=False)
        self.register_buffer("b", torch.zeros(2))
        self.holder = _Holder()
        self.sub = nn.ModuleList([nn.Linear(2, 2)])


PATHS = ["", "blocks", "blocks.0", "blocks.0.w", "blocks.1.b", "blocks.0.holder.cfg.k",
         "blocks.0.holder.cfg.0", "blocks.0.holder.none", "blocks.0.holder.none.x",
         "blocks.0.holder.items.1.0", "blocks.0.holder.items.5", "blocks.0.sub.0.weight",
         "blocks.0.__class__", "blocks.0.__class__.x", "blocks.2.w", "blocks.0.missing.w",
         "blocks.0.training", "blocks.0.holder.cfg.missing", "blocks..w"]


def test_path_reader_reads_what_get_path_reads() -> None:
    model = nn.Module()
    model.blocks = nn.ModuleList([_Block(), _Block()])
    reader = PathReader(model)
    for path in PATHS * 2:  # the second time from the owners already read
        assert reader.get(path) is get_path(model, path), path


NAMES = ["w", "holder", "sub", "missing", "__class__", "__dict__", "", "holder.cfg", "0",
         "training", "_parameters"]


def _agrees(read: Any) -> bool:
    """Whether ``read(owner, name)`` is ``get_path(owner, name)`` for every owner and name."""
    block = _Block()
    return all(read(owner, name) is get_path(owner, name)
               for owner in (block, block.holder, block.sub, [1, 2], {"w": 3}) for name in NAMES)


def test_child_reads_what_get_path_reads() -> None:
    assert _agrees(child)


@pytest.mark.parametrize("planted", [
    lambda owner, name: step_into(owner, name) if name else owner,  # no dunder, no dot check
    lambda owner, name: step_into(owner, name) if name and "." not in name else
    get_path(owner, name)],  # no dunder check
    ids=["one-hop-always", "dunder-read"])
def test_canary_a_child_without_its_checks_is_caught(planted: Any) -> None:
    assert not _agrees(planted)


def _objects_on(model: Any, path: str) -> list[Any]:
    """The reference: the model and every object on ``path``, hop by hop from the root."""
    out, obj = [model], model
    for part in path.split(".") if path else ():
        obj = get_path(obj, part)
        if obj is MISSING or obj is None:
            break
        out.append(obj)
    return out


def test_path_reader_chain_is_every_object_on_the_way() -> None:
    model = nn.Module()
    model.blocks = nn.ModuleList([_Block(), _Block()])
    reader = PathReader(model)
    for path in PATHS:
        assert list(map(id, reader.chain(path))) == list(map(id, _objects_on(model, path))), path


def test_canary_a_reader_kept_across_a_write_reads_the_old_owner() -> None:
    """The reader remembers owners: it is valid only while nothing on the way changes (a
    phase that writes nothing), which is why each phase makes its own."""
    model = nn.Module()
    model.blocks = nn.ModuleList([_Block()])
    reader = PathReader(model)
    old = reader.get("blocks.0.w")
    model.blocks[0] = _Block()
    assert reader.get("blocks.0.w") is old
    assert get_path(model, "blocks.0.w") is not old


# ---- the bit check in concatenations --------------------------------------------------------


def _pairs() -> list[tuple[Any, Any]]:
    g = torch.Generator().manual_seed(0)
    pairs: list[tuple[Any, Any]] = []
    for dtype in (torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int64,
                  torch.int8, torch.bool):
        for n in (0, 1, 5):
            a = (torch.rand(n, generator=g) * 10).to(dtype)
            pairs.append((a, a.clone()))
    nan = torch.tensor([float("nan")])
    other_nan = nan.view(torch.int32).add(1).view(torch.float32)  # another payload
    pairs += [(torch.tensor([0.0]), torch.tensor([-0.0])), (nan, other_nan), (nan, nan.clone()),
              (torch.ones(2, 3), torch.ones(3, 2)), (torch.ones(3), torch.ones(3).double()),
              (torch.ones(4, 4).t(), torch.ones(4, 4)), (torch.ones(1 << 17), torch.ones(1 << 17)),
              (torch.ones(3, dtype=torch.complex64), torch.ones(3, dtype=torch.complex64))]
    return pairs


def test_bit_check_in_batches_is_bits_equal_of_each_pair() -> None:
    pairs = _pairs()
    expected = [bits_equal(a, b) for a, b in pairs]
    assert _bits_equal_all(pairs) == expected
    assert expected.count(False) == 4  # -0.0, the NaN payload, the shape and the dtype


@pytest.mark.parametrize("where", [0, 517, 999])
def test_one_differing_pair_among_many_is_found(where: int) -> None:
    left = [torch.full((4,), float(i)) for i in range(1000)]
    right = [t.clone() for t in left]
    right[where][2] = -0.0 if where == 0 else right[where][2].nextafter(torch.tensor(1e9))
    same = _bits_equal_all(list(zip(left, right)))
    assert [i for i, ok in enumerate(same) if not ok] == [where]


def test_canary_value_equality_would_miss_signed_zero() -> None:
    """The batch compares bits, not values: ``==`` (torch.equal on floats) says a signed zero
    is equal, the bit check does not."""
    a, b = torch.zeros(8), torch.zeros(8)
    b[3] = -0.0
    assert torch.equal(a, b)
    assert _bits_equal_all([(a, b), (a, a.clone())]) == [False, True]


# ---- code generation's sweeps ---------------------------------------------------------------


def _levels_reference(ctx: Any, steps: list[Any]) -> list[int]:
    """The scheduler's levels, each step's storage addresses read through ``storage_ptrs``."""
    level_of_node: dict[str, int] = {}
    last_write: dict[int, int] = {}
    last_read: dict[int, int] = {}
    levels = []
    for step in steps:
        refs = step.reads()
        reads = set().union(*map(ctx.storage_ptrs, refs))
        writes = ctx.storage_ptrs(step.target) if step.action.value in ("out", "copy") else set()
        lvl = max([level_of_node.get(r, -1) + 1 for r in refs]
                  + [last_write.get(p, -1) + 1 for p in reads]
                  + [max(last_write.get(p, -1), last_read.get(p, -1)) + 1 for p in writes]
                  + [0])
        levels.append(lvl)
        level_of_node[step.node] = lvl
        if step.target:
            level_of_node[step.target] = lvl
        for p in reads:
            last_read[p] = max(last_read.get(p, -1), lvl)
        for p in writes:
            last_write[p] = max(last_write.get(p, -1), lvl)
    return levels


def _plans() -> list[Any]:
    cfg = RefConfig(layers=3)
    torch.manual_seed(0)
    deepseek = DeepseekModel(scale=1 / 256, layers=3, experts=8)
    deepseek.reload(0)
    deepseek.post_load()
    return [compile_plan(build_reference_model(make_weights(cfg, 10), cfg=cfg),
                         load_specs([reference_spec_path()])),
            compile_plan(deepseek, deepseek_specs()),
            compile_plan(scaling_model(20), [scaling_spec()]),
            compile_plan(scaling_model(5), [_chained_spec()])]


def _chained_spec() -> Any:
    """Derived tensors reading derived tensors: steps that wait on other steps."""
    from derivgraph import DerivedTensor, Spec, Target

    def d(name: str, formula: str) -> DerivedTensor:
        return DerivedTensor(name=name, kind="attribute", formula=formula)

    return Spec(name="chained", target=Target(module_class=["ScalingLayer"]),
                derived=[d("inv", "1.0 / scale"), d("prod", "inv * weight"),
                         d("twice", "prod + prod"), d("back", "twice - inv")])


@pytest.fixture(scope="module")
def plans() -> list[Any]:
    return _plans()


def test_levels_are_the_per_step_rule(plans: list[Any]) -> None:
    deepest = []
    for plan in plans:
        levels = schedule.levels(plan.tensors, plan.steps)
        assert levels == _levels_reference(plan.tensors, plan.steps)
        deepest.append(max(levels))
    assert max(deepest) > 0, deepest  # something waits on something: the comparison has teeth


def test_canary_levels_blind_to_shared_storage_differ() -> None:
    """Two steps writing one storage through two targets must be ordered; a scheduler that
    ignores the addresses (planted: every address unread) puts them on one level."""

    class Ctx:
        def __init__(self) -> None:
            base = torch.zeros(4)
            self.table = {"a": base[:2], "b": base[2:], "s": torch.ones(2)}

        def bound_values(self, refs: Any, missing: Any = None) -> list[Any]:
            return [self.table.get(r, missing) for r in refs]

        def storage_ptrs(self, ref: str) -> set[int]:
            t = self.table.get(ref)
            return set() if t is None else {t.untyped_storage().data_ptr()}

    from derivgraph.compiler.graph import NodeRef
    from derivgraph.compiler.lower import Action, Step

    steps = [Step("a", Action.OUT, "neg", (NodeRef("s"),), {}, None, "a"),
             Step("b", Action.OUT, "neg", (NodeRef("s"),), {}, None, "b")]
    ctx = Ctx()
    assert schedule.levels(ctx, steps) == _levels_reference(ctx, steps) == [0, 1]
    blind = Ctx()
    blind.bound_values = lambda refs, missing=None: [missing for _ in refs]  # type: ignore
    assert schedule.levels(blind, steps) == [0, 0]


def test_operand_lists_bind_what_operand_binds_and_name_only_the_list(plans: list[Any]) -> None:
    """Each prebuilt list binds, tensor by tensor, the value naming its operands one by one
    gives; its sources and derived tensors are named by the list alone (one global per list),
    any other member (a view, a constant) as :meth:`Emitter.operand` names it."""
    for plan in plans:
        graph = plan.graph
        groups = [key.items for key in plan.programs.bindings.names
                  if isinstance(key, codegen.TensorList)
                  and all(isinstance(k, codegen.Bound) for k in key.items)]
        assert groups
        for items in groups:
            refs = [k.ref for k in items]
            swept, single = codegen.Bindings(), codegen.Bindings()
            name = codegen.Emitter(plan.tensors, swept).tensors(refs)
            one = codegen.Emitter(plan.tensors, single)
            values = [single.globals[one.operand(r)] for r in refs]
            assert list(map(id, swept.globals[name])) == list(map(id, values))
            plain = {r for r in refs if graph.nodes[r].kind is NodeKind.SOURCE
                     or r in graph.derived and graph.derived[r].kind is not TensorKind.SCALAR}
            assert plain and not any(codegen.Bound(r) in swept.names for r in plain)
            named = {k: v for k, v in single.names.items()
                     if getattr(k, "ref", None) not in plain}
            assert {k: v for k, v in swept.names.items()
                    if not isinstance(k, codegen.TensorList)} == named
