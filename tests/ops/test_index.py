"""Index ops (arange, repeat_interleave, eq, index_select) and tuple holders
(derivgraph.runtime.containers).

Each op: eager vs its ``out=`` path, its shape/dtype rule vs torch, its size bound (DG016), and
a bad spec for its misuse, refused at the spec's file:line before any tensor is touched. Tuple
holders: A -> B -> A through an engine post-load step that rebinds a new tuple (the startup
tuple object and its items kept, bit-exact with a cold start), and DG043 for tuples that cannot
be put back. vLLM's own LiLiCorr tuple is in tests/vllm/specs/test_specs_*.py.
"""

from __future__ import annotations

from collections import namedtuple
from pathlib import Path

import pytest
import torch
from torch import nn

from derivgraph import Rule, SpecValidationError, compile_plan, load_spec_file
from derivgraph.ops import OPS
from derivgraph.paths import get_path
from derivgraph.spec.check import check_specs

# ---- the ops ----------------------------------------------------------------------------------


def _meta(name: str, *args, **kwargs) -> torch.Tensor:
    meta_args = [a.to("meta") if isinstance(a, torch.Tensor) else a for a in args]
    return OPS[name].infer(*meta_args, **kwargs)


@pytest.mark.parametrize(("n", "dtype"), [(5, "int64"), (0, "int64"), (4, torch.float32)])
def test_arange_matches_torch_and_its_shape_rule(n, dtype) -> None:
    got = OPS["arange"].fn(n, dtype, device="cpu")
    want = torch.arange(n, dtype=torch.int64 if dtype == "int64" else dtype)
    assert torch.equal(got, want) and got.dtype == want.dtype
    meta = _meta("arange", n, dtype)
    assert meta.shape == want.shape and meta.dtype == want.dtype and meta.is_meta


def test_repeat_interleave_matches_torch_and_its_shape_rule() -> None:
    x = torch.arange(6).view(2, 3)
    for dim, want in ((None, torch.repeat_interleave(x, 3)),
                      (0, torch.repeat_interleave(x, 3, dim=0)),
                      (-1, torch.repeat_interleave(x, 3, dim=-1))):
        got = OPS["repeat_interleave"].fn(x, 3, dim)
        assert torch.equal(got, want), dim
        meta = _meta("repeat_interleave", x, 3, dim)
        assert meta.shape == want.shape and meta.dtype == want.dtype, dim
    with pytest.raises(TypeError, match="integer count"):
        _meta("repeat_interleave", x, torch.tensor(2))
    with pytest.raises(ValueError, match=">= 0"):
        _meta("repeat_interleave", x, -1)


def test_eq_eager_out_and_shape_rule() -> None:
    a = torch.tensor([0, 0, 1, 1]).view(-1, 1)
    b = a.view(1, -1)
    want = a == b
    assert torch.equal(OPS["eq"].fn(a, b), want)
    out = torch.empty(4, 4, dtype=torch.bool)
    assert OPS["eq"].out(a, b, out=out) is out and torch.equal(out, want)
    meta = _meta("eq", a, b)
    assert meta.shape == (4, 4) and meta.dtype == torch.bool
    assert torch.equal(OPS["eq"].fn(torch.arange(3), 0), torch.tensor([True, False, False]))
    with pytest.raises(RuntimeError, match="broadcast"):
        _meta("eq", torch.zeros(3), torch.zeros(4))


def test_index_select_eager_out_and_shape_rule() -> None:
    x = torch.randn(2, 7, dtype=torch.bfloat16)
    index = torch.tensor([6, 0, 3, 3])
    want = x[:, index]
    got = OPS["index_select"].fn(x, 1, index)
    assert torch.equal(got, want)
    out = torch.empty(2, 4, dtype=torch.bfloat16)
    assert OPS["index_select"].out(x, 1, index, out=out) is out and torch.equal(out, want)
    meta = _meta("index_select", x, 1, index)
    assert meta.shape == want.shape and meta.dtype == want.dtype
    with pytest.raises(TypeError, match="1-D int64"):
        _meta("index_select", x, 1, index.float())
    with pytest.raises(TypeError, match="1-D int64"):
        _meta("index_select", x, 1, index.view(2, 2))
    with pytest.raises(IndexError, match="out of range"):
        _meta("index_select", x, 2, index)


# ---- the ops in specs -------------------------------------------------------------------------

class Grid(nn.Module):
    """A bias table gathered by a constant index (like LiLiCorr's relative slot bias)."""

    def __init__(self, seed: int = 0) -> None:
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.table = nn.Parameter(torch.randn(2, 7, generator=g), requires_grad=False)
        self.scale = nn.Parameter(torch.rand(4, generator=g), requires_grad=False)
        self.slots, self.topk = 3, 2

    def load(self, seed: int) -> None:
        with torch.no_grad():
            for p, q in zip(self.parameters(), Grid(seed).parameters()):
                p.copy_(q)


_GATHER = ("contiguous(view(index_select(table, 1, flatten(view(repeat_interleave(arange(S), K), "
           "[-1, 1]) - view(repeat_interleave(arange(S), K), [1, -1]) + 3)), [2, L, L]))")


def _write(tmp_path: Path, derived: str, params: str = "") -> Path:
    path = tmp_path / "spec.yaml"
    params = params or "S: slots\n      K: topk\n      L: slots * topk"
    path.write_text(f"""version: 1
specs:
  - name: grid
    target: {{module_class: [Grid]}}
    params:
      {params}
    derived:
{derived}
""")
    return path


def _gather_reference(model: Grid) -> torch.Tensor:
    slot = torch.arange(model.slots).repeat_interleave(model.topk)
    return model.table[:, slot.view(-1, 1) - slot.view(1, -1) + 3].contiguous()


def test_constant_index_is_computed_at_compile_and_the_gather_reloads_a_b_a(tmp_path) -> None:
    path = _write(tmp_path, f'      - {{name: gathered, kind: buffer, formula: "{_GATHER}"}}\n'
                  '      - {name: top1, kind: buffer, formula: "cast(eq(arange(K), 0), float32)"}')
    model = Grid(1)
    plan = compile_plan(model, load_spec_file(path))
    source = plan.source()
    # index tensors depend on params alone: made once at compile, bound, never in the pass
    for op in ("arange", "repeat_interleave", "eq", "sub"):
        assert f"ops.{op}." not in source, source
    assert "ops.index_select.out(" in source  # the gather writes straight into the buffer
    assert plan.constant_entries == ["top1"]
    assert torch.equal(model.top1, torch.tensor([1.0, 0.0]))
    startup = model.gathered
    for seed in (2, 1, 2):
        model.load(seed)
        assert plan.run(verify=True).moved == []
        assert model.gathered is startup
        assert torch.equal(model.gathered, _gather_reference(Grid(seed))), seed
    again = model.gathered.clone()
    plan.run()
    assert torch.equal(model.gathered, again)  # idempotent


def _issues(tmp_path: Path, derived: str, params: str = "") -> list:
    path = _write(tmp_path, derived, params)
    model = Grid(1)
    before = {n: (p.data_ptr(), p.clone()) for n, p in model.named_parameters()}
    with pytest.raises(SpecValidationError) as info:
        compile_plan(model, load_spec_file(path))
    for n, p in model.named_parameters():  # nothing touched
        assert p.data_ptr() == before[n][0] and torch.equal(p, before[n][1])
    assert not hasattr(model, "bad")
    issues = info.value.issues
    for issue in issues:
        assert issue.location.file == str(path) and issue.location.line > 0 and issue.fix
    return issues


@pytest.mark.parametrize(("formula", "rule", "needle"), [
    ("index_select(table, 1, cast(scale, int64))", Rule.INDEX_NOT_CONSTANT, "reads scale"),
    ("index_select(table, 1, arange(8))", Rule.INDEX_OUT_OF_RANGE, "0..7 but dim 1 has 7"),
    ("index_select(table, 1, arange(3) - 1)", Rule.INDEX_OUT_OF_RANGE, "-1..1"),
    ("index_select(table, 1, arange(3, float32))", Rule.INFERENCE, "1-D int64"),
    ("index_select(table, 2, arange(3))", Rule.INFERENCE, "out of range"),
    ("arange(scale)", Rule.INFERENCE, "integer count"),
    ("repeat_interleave(table, scale)", Rule.INFERENCE, "integer count"),
    ("repeat_interleave(table, -2)", Rule.INFERENCE, ">= 0"),
    ("eq(table, scale)", Rule.INFERENCE, "broadcast"),
    ("arange(2 ** 40)", Rule.RESOURCE_LIMIT, "elements"),
    ("repeat_interleave(table, 2 ** 40)", Rule.RESOURCE_LIMIT, "elements"),
    ("index_select(table, 1, repeat_interleave(arange(2), 2 ** 40))", Rule.RESOURCE_LIMIT,
     "elements"),
])
def test_misused_index_ops_are_refused_before_any_tensor_is_touched(tmp_path, formula, rule,
                                                                    needle) -> None:
    issues = _issues(tmp_path, f'      - {{name: bad, kind: attribute, formula: "{formula}"}}')
    assert [i.rule for i in issues] == [rule], [str(i) for i in issues]
    assert needle in issues[0].message, str(issues[0])


@pytest.mark.parametrize(("formula", "rule"), [
    ("arange(10 ** 12)", Rule.RESOURCE_LIMIT),  # a literal size: refused without a model
    ("arange()", Rule.ARITY),
    ("index_select(table, 1)", Rule.ARITY),
    ("eq(table)", Rule.ARITY),
    ("repeat_interleave(table, 2, 0, 1)", Rule.ARITY),
])
def test_model_free_validation_of_index_ops(tmp_path, formula, rule) -> None:
    path = _write(tmp_path, f'      - {{name: bad, kind: attribute, formula: "{formula}"}}')
    issues = check_specs(load_spec_file(path))
    assert [i.rule for i in issues] == [rule], [str(i) for i in issues]


# ---- tuple holders ----------------------------------------------------------------------------

Pair = namedtuple("Pair", ["left", "right"])


class Splits(nn.Module):
    """An engine post-load step that rebinds a new tuple of new tensors (like LiLiCorr)."""

    def __init__(self, seed: int = 0, named: bool = False, cols: int = 6) -> None:
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.weight = nn.Parameter(torch.randn(3, cols, generator=g), requires_grad=False)
        self.named = named
        self.post_load()

    def post_load(self) -> None:
        w = self.weight
        items = (w[:, :2].contiguous(), w[:, 2:].contiguous())
        self.splits = Pair(*items) if self.named else items

    def load(self, seed: int, post_load: bool) -> None:
        with torch.no_grad():
            self.weight.copy_(Splits(seed, cols=self.weight.shape[1]).weight)
        if post_load:
            self.post_load()


_SPLITS = """version: 1
specs:
  - name: splits
    target: {module_class: [Splits]}
    derived:
      - {name: "0", owner: splits, kind: attribute, formula: "contiguous(weight[:, :2])"}
      - {name: "1", owner: splits, kind: attribute, formula: "contiguous(weight[:, 2:])"}
"""


def _splits_specs(tmp_path: Path, text: str = _SPLITS) -> list:
    path = tmp_path / "splits.yaml"
    path.write_text(text)
    return load_spec_file(path)


@pytest.mark.parametrize("named", [False, True], ids=["tuple", "namedtuple"])
def test_a_rebound_tuple_is_put_back_with_its_startup_items(tmp_path, named) -> None:
    model = Splits(1, named)
    plan = compile_plan(model, _splits_specs(tmp_path))
    assert sorted(plan.entries) == ["splits.0", "splits.1"]
    assert all(e.adopted for e in plan.entries.values())  # the engine's own tuple and items
    startup = model.splits
    items = [(t, t.data_ptr()) for t in startup]
    for seed, engine in ((2, True), (1, False), (2, True), (1, True)):
        model.load(seed, post_load=engine)
        if engine:
            assert model.splits is not startup  # the engine rebound a new tuple
            report = plan.refill(verify=True)
        else:
            report = plan.run(verify=True)
        assert report.moved == []
        assert model.splits is startup and type(model.splits) is type(startup)
        for (t, ptr), now in zip(items, model.splits):
            assert now is t and now.data_ptr() == ptr
        cold = Splits(seed, named)
        for a, b in zip(model.splits, cold.splits):
            assert torch.equal(a, b), seed
    assert plan.run(verify=True).rebinds == 0  # idempotent, nothing to put back
    assert all(torch.equal(a, b) for a, b in zip(model.splits, Splits(1, named).splits))


def test_a_tuple_around_reallocated_items_is_rebuilt_in_permissive_mode(tmp_path) -> None:
    model = Splits(1)
    plan = compile_plan(model, _splits_specs(tmp_path))
    model.weight = nn.Parameter(torch.randn(3, 9), requires_grad=False)  # a wider checkpoint
    report = plan.run(strict=False)
    assert sorted(report.reallocated) == ["splits.1"]
    assert model.splits[1] is plan.entries["splits.1"].storage
    assert torch.equal(model.splits[1], model.weight[:, 2:])
    assert plan.moved() == []


class BadHolders(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(3, 6), requires_grad=False)
        w = self.weight
        self.in_list = [(w[:, :2].contiguous(),)]
        self.mixed = (w[:, :2].contiguous(), None)
        self.sub = nn.Module()

    @property
    def prop(self) -> tuple:
        return (self.weight[:, :2].contiguous(),)


class OddTuple(tuple):
    pass


@pytest.mark.parametrize(("decl", "needle"), [
    ('{name: "0", owner: in_list.0, kind: attribute, formula: "weight"}', "not held in a plain"),
    ('{name: "0", owner: prop, kind: attribute, formula: "contiguous(weight[:, :2])"}',
     "not held in a plain"),
    ('{name: "5", owner: mixed, kind: attribute, formula: "weight"}', "not an index"),
    ('{name: "1", owner: mixed, kind: attribute, formula: "weight"}', "holds a NoneType"),
    ('{name: "0", owner: mixed, kind: alias, of: weight}', "kind 'attribute'"),
    ('{name: "0", owner: odd, kind: attribute, formula: "contiguous(weight[:, :2])"}',
     "not a namedtuple"),
    ('{name: "0", owner: sub, kind: attribute, formula: "weight"}', "not a tuple"),
])
def test_tuples_that_cannot_be_put_back_are_refused(tmp_path, decl, needle) -> None:
    model = BadHolders()
    model.odd = OddTuple((model.weight[:, :2].contiguous(),))
    text = f"""version: 1
specs:
  - name: bad
    target: {{module_class: [BadHolders]}}
    derived:
      - {decl}
"""
    before = {k: id(v) for k, v in vars(model).items()}
    with pytest.raises(SpecValidationError) as info:
        compile_plan(model, _splits_specs(tmp_path, text))
    (issue,) = info.value.issues
    assert issue.rule == Rule.CONTAINER_HOLDER and needle in issue.message, str(issue)
    assert issue.location.line == 6 and issue.fix
    assert {k: id(v) for k, v in vars(model).items()} == before


def test_tuple_items_must_equal_their_formulas(tmp_path) -> None:
    model = Splits(1)
    text = _SPLITS.replace("weight[:, 2:]", "weight[:, 1:]")
    with pytest.raises(Exception) as info:
        compile_plan(model, _splits_specs(tmp_path, text))
    assert Rule.ADOPTION in str(info.value)
    assert get_path(model, "splits.1").shape == (3, 4)  # the engine's tuple, untouched


def test_static_audit_matches_a_tuple_site_to_its_declared_items(tmp_path) -> None:
    """The audit sees `self.splits = (...)`; a spec declaring the tuple's items declares it."""
    from derivgraph.audit.static.match import SpecIndex
    from derivgraph.audit.static.sites import CategoryId, RawSite

    def site(attr: str) -> RawSite:
        return RawSite(line=1, col=0, cls="Splits", function="post_load", attr=attr,
                       owner="self", category=CategoryId.CONTAINER, reason="", expr="(...)",
                       kind="attribute", via=(), classes=("Splits",))

    index = SpecIndex(_splits_specs(tmp_path))
    assert index.match(site("splits")) == "splits"
    assert index.match(site("other")) is None  # canary: another attribute stays undeclared
    assert index.match(site("0")) is None  # the item index alone names no site


def test_an_index_read_from_an_engine_computed_tensor_is_refused(tmp_path) -> None:
    path = _write(tmp_path, '      - {name: eng, kind: engine, dtype: int64, shape: [2]}\n'
                  '      - {name: bad, kind: attribute, formula: "index_select(table, 1, eng)"}')
    model = Grid(1)
    model.eng = torch.tensor([0, 1])
    with pytest.raises(SpecValidationError) as info:
        compile_plan(model, load_spec_file(path))
    (issue,) = info.value.issues
    assert issue.rule == Rule.INDEX_NOT_CONSTANT and issue.location.line == 11, str(issue)
    assert not hasattr(model, "bad")
