"""mend34 (issue 21, code quality): one reading of ``self.<attr>`` and of a class body.

* :func:`.walk.self_attribute` is the one test of ``self.<attr>`` the readers share
  (:mod:`.bound_classes`, :mod:`.lazy_resets`, :mod:`.quant_keys`, :mod:`.staging`,
  :mod:`.lazy_accessor`, :mod:`.backend_branches`, :mod:`.selection`).
* A storing class's selector bindings (:func:`.backend_branches.bound_selectors`) are read with
  :mod:`ast` once per :func:`.selection.serving_classes` call and handed to the rules that need
  them; :func:`.bound_classes.bound_classes` reads a class's bindings once per (module, class).
* A selector module's backend branches (:func:`.backend_branches.owners`) and a class's
  selected classes (:func:`.selection.selected_classes`) are read with :mod:`ast`: a name in a
  comment, a string, a nested class or a text run past a test's bracket no longer counts.

Each rule has real values and a canary (a case the old text reading or a planted bug gets
wrong).
"""

from __future__ import annotations

import ast

from derivgraph.audit.static import backend_branches, bound_classes, quant_keys, selection
from derivgraph.audit.static.backend_branches import Binding, bound_selectors, owners
from derivgraph.audit.static.readers import ReaderIndex
from derivgraph.audit.static.walk import self_attribute


def _expr(source: str) -> ast.expr:
    return ast.parse(source, mode="eval").body


# ---- self_attribute ----------------------------------------------------------------------------

def test_self_attribute_reads_the_attribute_straight_on_self():
    assert self_attribute(_expr("self.experts_cls")) == "experts_cls"
    store = ast.parse("self.w = 1").body[0].targets[0]  # type: ignore[attr-defined]
    assert self_attribute(store) == "w"


def test_canary_self_attribute_refuses_another_receiver_or_a_deeper_chain():
    assert self_attribute(_expr("cls.experts_cls")) is None  # not self
    assert self_attribute(_expr("layer.w")) is None
    assert self_attribute(_expr("self_.w")) is None
    assert self_attribute(_expr("self.moe.backend")) is None  # on self.moe, not on self
    assert self_attribute(_expr("self")) is None
    assert self_attribute(_expr("self.f()")) is None  # a call, not the attribute


def test_the_readers_share_one_self_attribute():
    """No reader keeps a private copy of the test (the five of the brief, and the two that
    read a class body with ast now)."""
    import derivgraph.audit.static.lazy_accessor as lazy_accessor
    import derivgraph.audit.static.lazy_resets as lazy_resets
    import derivgraph.audit.static.staging as staging

    for module in (bound_classes, lazy_resets, quant_keys, staging, lazy_accessor,
                   backend_branches, selection):
        assert module.self_attribute is self_attribute, module.__name__
        assert not hasattr(module, "_self_attr") and not hasattr(module, "_is_self_attr")


# ---- the selector bindings of a class ----------------------------------------------------------

_SELECT = '''\
from enum import Enum


class Backend(Enum):
    A = 1
    B = 2
    C = 3


def select_backend(moe) -> tuple[Backend, type[Experts]]:
    return Backend.A, AExperts


def plain(moe) -> int:
    return 1


def owned(backend):
    if backend == Backend.A:
        from kernels import AExperts  # BExperts is not A's
        return [AExperts]
    elif backend in (Backend.B, Backend.C):
        log("CExperts is not used")
        return [kernels.BExperts]
    return []


def _use_a16(backend, flag):
    return flag or (
        backend == Backend.A and other
    )


def select_other(config: CExperts) -> list:
    return []
'''
_SELECT_IMPORTS = "from kernels import AExperts, BExperts, CExperts\nimport kernels\n"

_HOME = '''\
from sel import select_backend, plain
from kernels import MarlinExperts, OtherExperts, make


class Method:
    """A docstring with an open bracket ( and ``cfg = self.cfg``."""

    def __init__(self, moe):
        self.backend, self.experts_cls = select_backend(moe)
        self.count = plain(moe)
        self.first = select_backend(moe)[0]
        cfg = self.cfg
        if moe.x:
            self.experts_cls = MarlinExperts

    def process(self, layer):
        self.kernel = make(quant_config=self.cfg, experts_cls=MarlinExperts, n=2)

    class Inner:
        def f(self, x):
            self.inner_cls = select_backend(x)
            make(quant_config=self.cfg, experts_cls=OtherExperts)
'''


def _index() -> tuple[ReaderIndex, str, str]:
    files = [("sel.py", _SELECT_IMPORTS + _SELECT), ("home.py", _HOME)]
    return ReaderIndex(files, (), lambda c: frozenset({c})), files[0][1], files[1][1]


def test_bound_selectors_reads_the_bindings_in_text_order():
    index, select, home = _index()
    assert bound_selectors(index, home, "Method") == (
        Binding("experts_cls", select, "select_backend"),  # the last self target
        Binding("first", select, "select_backend"))  # indexed
    assert bound_selectors(index, home, "Missing") == ()
    assert bound_selectors(index, home, None) == ()


def test_canary_a_nested_class_or_a_function_not_returning_classes_binds_nothing():
    index, _, home = _index()
    held = {b.attr for b in bound_selectors(index, home, "Method")}
    assert "inner_cls" not in held  # Inner's self is another object
    assert "count" not in held  # plain() is not annotated to return classes
    assert "backend" not in held  # not the last self target of the tuple


def test_selected_classes_reads_the_class_with_ast():
    index, _, home = _index()
    found = bound_selectors(index, home, "Method")
    # named beside self.cfg in the call that takes it (not the nested class's OtherExperts,
    # not what a bracket in the docstring or ``cfg = self.cfg`` would reach)
    assert selection.selected_classes(index, home, "Method", found, "cfg") == {"MarlinExperts"}
    # no attribute: the selector module's classes and the class bound directly
    assert selection.selected_classes(index, home, "Method", found) == {
        "AExperts", "BExperts", "CExperts", "Backend", "Enum", "MarlinExperts"}


def test_canary_selected_classes_without_bindings_names_only_what_is_beside():
    index, _, home = _index()
    assert selection.selected_classes(index, home, "Method", (), "cfg") == {"MarlinExperts"}
    assert selection.selected_classes(index, home, "Method", ()) == frozenset()


def test_serving_classes_reads_the_bindings_once(monkeypatch):
    index, _, home = _index()
    calls = []
    real = selection.bound_selectors

    def counted(*args):
        calls.append(args[2])
        return real(*args)

    monkeypatch.setattr(selection, "bound_selectors", counted)
    selection.serving_classes(index, "", home, "Method", "cfg", "process")
    assert calls == ["Method"]
    # the rules it combines take them from it: none reads them itself
    assert not hasattr(bound_classes, "bound_selectors")
    assert not hasattr(quant_keys, "bound_selectors")


def test_bound_classes_reads_a_class_once_for_all_its_methods(monkeypatch):
    index, _, home = _index()
    found = bound_selectors(index, home, "Method")
    walked = []
    real = bound_classes._fixed_backends
    monkeypatch.setattr(bound_classes, "_fixed_backends",
                        lambda nodes: walked.append(len(nodes)) or real(nodes))
    first = bound_classes.bound_classes(index, home, "Method", found, "process")
    second = bound_classes.bound_classes(index, home, "Method", found, "__init__")
    assert walked and len(walked) == 1
    # real values: the fall-through binding is the selector's: its order ranks (None)
    assert first is None and second is None


# ---- a selector module's backend branches ------------------------------------------------------

def test_owners_reads_the_branches_with_ast():
    index, select, _ = _index()
    found = owners(index, select)
    assert found is not None
    enum, owner, tested = found
    assert enum == "Backend"
    assert owner == {
        "AExperts": (frozenset({"A"}), select.index("[AExperts]") + 1),
        "BExperts": (frozenset({"B", "C"}), select.index("BExperts]")),
    }
    start = select.index("backend in (")
    assert (start, select.index(")", start) + 1) in tested  # the test's own bracket
    assert backend_branches.backend_classes(index, select, "C") == ("BExperts",)
    assert backend_branches.class_backends(index, select, "AExperts") == {"A"}


def test_canary_a_comment_a_string_or_text_past_a_test_is_no_mention():
    index, select, _ = _index()
    _, owner, _ = owners(index, select)  # type: ignore[misc]
    # "BExperts" in A's comment, "CExperts" in B's string, and CExperts annotated in
    # select_other after _use_a16's test (a text reading ran to the next ':' past its bracket)
    assert owner["BExperts"][0] == {"B", "C"}
    assert "CExperts" not in owner
