"""``DerivedNode``'s kind: read from its declaration (``tensor_kind``) when it is made, or
given by a caller that read it once for a column of one declaration (the build's
``_derived_columns``); the defaults (a new CPU device, a new params dict) are made per node
as the dataclass's fields made them. A stamped build's nodes made by column equal, field by
field and in order, those made row by row. Canary (see the helper's NOTES): every column
given the first declaration's kind."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from derivgraph import DerivedTensor
from derivgraph.compiler import bind, build
from derivgraph.compiler.graph import DerivedNode, tensor_kind
from derivgraph.compiler.stamp import stamping
from derivgraph.spec.kinds import TensorKind
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec


def test_kind_read_or_given() -> None:
    decl = DerivedTensor(name="a", kind="alias", of="scale")
    read = DerivedNode("m.a", None, decl, "m")  # type: ignore[arg-type]
    assert read.kind is TensorKind.ALIAS is tensor_kind(decl)
    given = DerivedNode("m.a", None, decl, "m", kind=TensorKind.ALIAS)  # type: ignore[arg-type]
    assert given == read and list(vars(given)) == list(vars(read))
    assert list(vars(read)) == ["id", "bound", "decl", "owner_path", "input", "device",
                                "params", "meta", "_kind"]
    assert "_kind" not in repr(read)


def test_defaults_are_made_per_node() -> None:
    decl = DerivedTensor(name="a", kind="attribute", formula="1.0 / scale")
    one = DerivedNode("m.a", None, decl, "m")  # type: ignore[arg-type]
    two = DerivedNode("n.a", None, decl, "n")  # type: ignore[arg-type]
    assert one.device == torch.device("cpu") and one.params == {} and one.input is None
    assert one.params is not two.params and one.meta is None
    given = DerivedNode("m.a", None, decl, "m", "x", torch.device("meta"), {"E": 8},  # type: ignore[arg-type]
                        torch.empty(0, device="meta"))
    assert (given.input, given.device, given.params) == ("x", torch.device("meta"), {"E": 8})
    assert given.meta is not None and given.kind is TensorKind.ATTRIBUTE


def _nodes(columns: bool, monkeypatch: pytest.MonkeyPatch) -> list[list[tuple[str, Any]]]:
    with monkeypatch.context() as patch:
        if not columns:
            patch.setattr(build, "_derived_columns", lambda *args: None)
        model = scaling_model(9)
        bound = bind.match_specs(model, [scaling_spec()])
        with stamping(True):
            graph = build.build_graph(model, bound)
    assert graph.stamped == 8
    return [[(k, v if k != "bound" else v.module_path) for k, v in vars(n).items()]
            for n in graph.derived.values()]


def test_column_nodes_equal_row_nodes(monkeypatch: pytest.MonkeyPatch) -> None:
    made = []
    real = build._derived_columns

    def spy(*args: Any) -> Any:
        got = real(*args)
        made.append(got is not None)
        return got

    monkeypatch.setattr(build, "_derived_columns", spy)
    by_column = _nodes(True, monkeypatch)
    assert made == [True]
    by_row = _nodes(False, monkeypatch)
    assert len(by_column) == 36
    for column, row in zip(by_column, by_row, strict=True):
        assert [k for k, _ in column] == [k for k, _ in row]
        assert dict(column) | {"meta": None} == dict(row) | {"meta": None}
        assert dict(column)["_kind"] is tensor_kind(dict(column)["decl"])


def test_a_spec_naming_one_tensor_twice_is_reported_as_row_by_row() -> None:
    """Every row repeats an id: the columns make nothing and each row reports its duplicate,
    as without stamping."""
    from derivgraph import Spec, Target

    spec = Spec(name="dup", target=Target(module_class=["ScalingLayer"]),
                params={"E": "scale.shape[0]"},
                derived=[DerivedTensor(name="inv", kind="attribute", formula="1.0 / scale"),
                         DerivedTensor(name="inv", kind="attribute", formula="2.0 / scale")])
    model = scaling_model(5)
    bound = bind.match_specs(model, [spec])
    got = []
    for on in (True, False):
        with stamping(on):
            graph = build.build_graph(model, bound)
        got.append([(i.rule, i.message) for i in graph.issues])
        assert graph.params_stamped == (4 if on else 0)
    assert got[0] == got[1] and len(got[0]) == 5
