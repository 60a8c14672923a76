"""Binding fold declarations: :func:`compile_folds` picks each spec's folds out once and
reads the derived ids only when a fold is bound; its entries and issues are the rule's, each
fold declaration of each bound spec bound in order (written out per module below)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch
from torch import nn

from derivgraph import load_spec_text
from derivgraph.compiler import fold
from derivgraph.compiler.bind import BoundSpec, match_specs
from derivgraph.compiler.fold import FoldSet, compile_folds, is_fold
from derivgraph.errors import Rule, SpecIssue


class Block(nn.Module):
    def __init__(self, i: int) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.full((2, 3), float(i + 1)), requires_grad=False)
        self.s = nn.Parameter(torch.arange(3.0) + i, requires_grad=False)
        self.mult = 2.0 + i


class Other(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.ones(4), requires_grad=False)
        self.mult = 5.0


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.ModuleList([Block(i) for i in range(4)])
        self.other = Other()


def _specs() -> list:
    return load_spec_text(
        "version: 1\nspecs:\n"
        "  - name: a\n    target: {module_class: Block}\n    derived:\n"
        "      - {name: d, kind: attribute, formula: 'w * 2'}\n"
        "      - {name: w, kind: fold, formula: 'w * m', config: {m: mult}}\n"
        "      - {name: e, kind: attribute, formula: 's + 1'}\n"
        "      - {name: s, kind: fold, formula: 's * 2'}\n"
        "  - name: b\n    target: {module_class: Other}\n    derived:\n"
        "      - {name: w, kind: fold, formula: 'w * m', config: {m: mult}}\n"
        "  - name: c\n    target: {module_class: Block}\n    derived:\n"
        "      - {name: s, kind: fold, formula: 's + 1'}\n"   # folded by `a` too: DUPLICATE
        "      - {name: n, kind: fold, formula: 'n + 1'}\n"   # no such source
        "  - name: q\n    target: {module_class: Block}\n    derived:\n"
        "      - {name: q, kind: attribute, formula: 'w + 1'}\n", "folds.yaml")


def _rule(model: nn.Module, bound: list[BoundSpec], derived_ids: set[str],
          ) -> tuple[FoldSet, list[SpecIssue]]:
    """The rule written out: every declaration of every bound spec, the folds bound in order."""
    folds, issues = FoldSet(), []
    for b in bound:
        for decl in b.spec.derived:
            if not is_fold(decl):
                continue
            entry = fold._compile_one(model, b, decl, issues)
            if entry is None:
                continue
            if entry.id in folds.entries or entry.id in derived_ids:
                issues.append(SpecIssue(Rule.DUPLICATE, entry.id, "", decl.location, entry.id))
                continue
            folds.entries[entry.id] = entry
    return folds, issues


def _summary(folds: FoldSet, issues: list[SpecIssue]) -> tuple[list, list]:
    entries = [(k, e.spec_name, e.decl.name, e.config, e.folded.tolist())
               for k, e in folds.entries.items()]
    return entries, [(i.rule, i.node) for i in issues]


@pytest.mark.parametrize("derived_ids", [set(), {"blocks.2.w", "other.w"}])
def test_the_folds_are_the_rules(derived_ids: set[str]) -> None:
    model = Net()
    bound = match_specs(model, _specs())
    issues: list[SpecIssue] = []
    got = _summary(compile_folds(model, bound, issues, list(derived_ids)), issues)
    assert got == _summary(*_rule(model, bound, derived_ids))
    assert len(got[0]) > 4 and any(r == Rule.DUPLICATE for r, _ in got[1])
    assert any(r == Rule.FOLD_DECLARATION for r, _ in got[1])


def test_each_spec_is_sifted_once(monkeypatch: pytest.MonkeyPatch) -> None:
    model = Net()
    bound = match_specs(model, _specs())
    seen: list[int] = []
    sift = fold.fold_decls

    def spy(decls):  # noqa: ANN001, ANN202
        decls = list(decls)
        seen.append(len(decls))
        return sift(decls)

    monkeypatch.setattr(fold, "fold_decls", spy)
    compile_folds(model, bound, [], ())
    assert len(bound) == 13 and len(seen) == 4  # four specs over 13 bound modules


def _never() -> Iterator[str]:
    raise AssertionError("the derived ids were read")
    yield ""


def test_without_a_fold_bound_the_derived_ids_are_not_read() -> None:
    model = Net()
    bound = [b for b in match_specs(model, _specs()) if b.spec.name == "q"]
    issues: list[SpecIssue] = []
    assert len(compile_folds(model, bound, issues, _never())) == 0 and not issues


def test_rows_without_folds_are_skipped_the_others_bound_in_order(
        monkeypatch: pytest.MonkeyPatch) -> None:
    model = Net()
    bound = sorted(match_specs(model, _specs()), key=lambda b: b.spec.name != "q")  # q's first
    assert bound[0].spec.name == "q" and not fold.fold_decls(bound[0].spec.derived)
    calls: list[str] = []
    one = fold._compile_one

    def spy(model, b, decl, issues):  # noqa: ANN001, ANN202
        calls.append(b.spec.name)
        return one(model, b, decl, issues)

    monkeypatch.setattr(fold, "_compile_one", spy)
    issues: list[SpecIssue] = []
    got = _summary(compile_folds(model, bound, issues, ()), issues)
    monkeypatch.setattr(fold, "_compile_one", one)
    assert "q" not in calls
    assert len(calls) == sum(len(fold.fold_decls(b.spec.derived)) for b in bound) == 17
    assert got == _summary(*_rule(model, bound, set()))


@pytest.mark.parametrize("name", ["a", "q"])
def test_one_spec_on_every_row_is_sifted_once_and_bound_as_the_rule(
        monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    # the one-spec test (no row visited when that spec has no fold) still binds a spec's folds
    model = Net()
    bound = [b for b in match_specs(model, _specs()) if b.spec.name == name]
    seen: list[int] = []
    sift = fold.fold_decls

    def spy(decls):  # noqa: ANN001, ANN202
        seen.append(1)
        return sift(decls)

    monkeypatch.setattr(fold, "fold_decls", spy)
    issues: list[SpecIssue] = []
    got = _summary(compile_folds(model, bound, issues, ()), issues)
    monkeypatch.setattr(fold, "fold_decls", sift)
    assert len(bound) == 4 and seen == [1]
    assert got == _summary(*_rule(model, bound, set()))
    assert len(got[0]) == (8 if name == "a" else 0)
