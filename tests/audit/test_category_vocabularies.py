"""The audits' categories and the static sites' kinds are closed enums: a word outside them is
refused where it enters, never compared as a string later (one place names each member)."""

from __future__ import annotations

import pytest

from derivgraph.audit.runtime.diff import CATEGORIES, CensusDiff, DiffCategory, Finding
from derivgraph.audit.static.sites import CATEGORIES as STATIC_CATEGORIES
from derivgraph.audit.static.sites import CategoryId, RawSite
from derivgraph.spec.kinds import TensorKind


def _site(category: object, kind: object = "attribute") -> RawSite:
    return RawSite(line=1, col=0, cls="C", function="C.f", attr="x", owner="self",
                   category=category, reason="", expr="...", kind=kind, via=(),
                   classes=("C",))  # type: ignore[arg-type]


def test_a_site_given_its_category_by_word_holds_the_member() -> None:
    site = _site("container")
    assert site.category is CategoryId.CONTAINER
    assert f"{site.category}" == "container"  # the report's word, unchanged


def test_a_site_with_an_unknown_category_or_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="containr"):
        _site("containr")
    assert _site("alias", "buffer").kind is TensorKind.BUFFER
    with pytest.raises(ValueError, match="bufer"):
        _site("alias", "bufer")


def test_every_static_rule_is_one_member_and_back() -> None:
    assert list(STATIC_CATEGORIES) == list(CategoryId)
    assert [c.rule_id for c in STATIC_CATEGORIES.values()] == [
        f"DGS{i:03d}" for i in range(1, len(CategoryId) + 1)]
    # and back: each rule's word, given to a site, is read into its member
    assert [_site(c.value).category for c in CategoryId] == list(CategoryId)
    assert all(type(_site(c.value).category) is CategoryId for c in CategoryId)


def test_a_census_diff_is_read_by_member_or_word() -> None:
    moved = Finding(DiffCategory.MOVED, "a", ("a",), "r", False)
    new = Finding(DiffCategory.NEW, "b", ("b",), "r", False)
    diff = CensusDiff([moved, new])
    assert diff.by("moved") == diff.by(DiffCategory.MOVED) == [moved]
    assert diff.moved == ["a"] and diff.new == ["b"]
    assert diff.undeclared() == ["a"]  # a new tensor is not an undeclared break
    assert [c.value for c in CATEGORIES] == ["moved", "stale", "unrefreshed", "gone", "new",
                                            "recapture"]
    with pytest.raises(ValueError):
        diff.by("mvoed")  # a typo is refused, not an empty list
