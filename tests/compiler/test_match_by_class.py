"""``match_specs`` asks a target that reads only the module's class (no quant-method class,
object or where predicate) once per module class, and any other target at every module; the
pairs are the rule's, module by module, in module order."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from derivgraph import DerivedTensor, Spec, Target
from derivgraph.compiler import bind
from derivgraph.compiler.bind import match_specs, target_matches


class Layer(nn.Module):
    def __init__(self, mode: str = "a") -> None:
        super().__init__()
        self.mode = mode
        self.scale = nn.Parameter(torch.ones(4), requires_grad=False)


class Wide(Layer):
    pass


class Other(nn.Module):
    pass


class Method:
    pass


def _spec(name: str, target: Target) -> Spec:
    return Spec(name=name, target=target,
                derived=[DerivedTensor(name=f"{name}_inv", kind="attribute",
                                       formula="1.0 / scale")])


def _model() -> nn.Module:
    root = nn.Module()
    root.layers = nn.ModuleList([Layer("a"), Other(), Wide("b"), Layer("b"), Wide("a"),
                                 Other(), Layer("a")])
    root.layers[3].quant_method = Method()
    return root


def _by_rule(model: nn.Module, specs: list[Spec]) -> list[tuple[str, str]]:
    """The pairs the rule gives, each target asked at each module."""
    return [(spec.name, path) for path, module in model.named_modules() for spec in specs
            if target_matches(spec.target, module)]


SPECS = [
    [_spec("c", Target(module_class=["Layer"]))],
    [_spec("w", Target(module_class=["Layer"], where={"mode": "a"}))],
    [_spec("c", Target(module_class=["Wide"])),
     _spec("w", Target(module_class=["Layer"], where={"mode": {"not": "a"}})),
     _spec("any", Target(module_class=["Module"]))],
    [_spec("q", Target(module_class=["Layer"], quant_method_class=["Method"]))],
    [_spec("o", Target(module_class=["Layer"], object="scale"))],
    # every target class-only, a class matching two of them (match_specs' by-class rows)
    [_spec("c", Target(module_class=["Layer"])), _spec("any", Target(module_class=["Module"])),
     _spec("w", Target(module_class=["Wide"]))],
    [_spec("none", Target(module_class=["Method"]))],
]


@pytest.mark.parametrize("specs", SPECS)
def test_the_pairs_are_the_rules(specs: list[Spec]) -> None:
    model = _model()
    got = [(b.spec.name, b.module_path) for b in match_specs(model, specs)]
    assert got == _by_rule(model, specs)
    assert all(b.module is model.get_submodule(b.module_path) for b in match_specs(model, specs))


def test_a_class_only_target_is_asked_once_per_class(monkeypatch: pytest.MonkeyPatch) -> None:
    model = _model()
    calls: list[tuple[str, type]] = []

    def counting(target: Target, module: nn.Module, classes: dict | None = None) -> bool:
        calls.append((target.module_class[0] if target.module_class else "", type(module)))
        return target_matches(target, module, classes)

    monkeypatch.setattr(bind, "target_matches", counting)
    specs = [_spec("c", Target(module_class=["Layer"])),
             _spec("w", Target(module_class=["Layer"], where={"mode": "a"}))]
    bound = match_specs(model, specs)
    modules = len(list(model.named_modules()))
    classes = len({type(m) for _, m in model.named_modules()})
    assert len(calls) == classes + modules  # the class-only target once per class
    assert [(b.spec.name, b.module_path) for b in bound] == [
        ("c", "layers.0"), ("w", "layers.0"), ("c", "layers.2"), ("c", "layers.3"),
        ("c", "layers.4"), ("w", "layers.4"), ("c", "layers.6"), ("w", "layers.6")]


def test_class_only_targets_are_asked_in_the_loops_order(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every target class-only: each class asked once per spec, at its first module, the
    classes in the order they first appear (the calls the row loop makes)."""
    model = _model()
    calls: list[tuple[str, str]] = []
    paths = {id(m): p for p, m in model.named_modules()}

    def counting(target: Target, module: nn.Module, classes: dict | None = None) -> bool:
        calls.append((target.module_class[0], paths[id(module)]))
        return target_matches(target, module, classes)

    monkeypatch.setattr(bind, "target_matches", counting)
    specs = [_spec("c", Target(module_class=["Layer"])), _spec("w", Target(module_class=["Wide"]))]
    bound = match_specs(model, specs)
    assert calls == [(c, p) for p in ("", "layers", "layers.0", "layers.1", "layers.2")
                     for c in ("Layer", "Wide")]
    assert [(b.spec.name, b.module_path) for b in bound] == _by_rule(model, specs)


def test_a_class_only_target_that_raises_is_reported_by_the_loop(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Canary: a class-only target raising a FormulaError at one class: the by-class answer is
    dropped and the row loop reports it as a SpecValidationError (once, at its spec)."""
    from derivgraph.errors import FormulaError, Rule, SpecValidationError

    def raising(target: Target, module: nn.Module, classes: dict | None = None) -> bool:
        if type(module) is Other:
            raise FormulaError(Rule.INFERENCE, "cannot test Other", "fix it")
        return target_matches(target, module, classes)

    monkeypatch.setattr(bind, "target_matches", raising)
    with pytest.raises(SpecValidationError) as err:
        match_specs(_model(), [_spec("c", Target(module_class=["Layer"]))])
    assert [(i.rule, i.message) for i in err.value.issues] == [(Rule.INFERENCE,
                                                                 "cannot test Other")]
