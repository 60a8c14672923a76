"""scan29's CPU cuts give exactly what the code they replaced gave.

* A function audit and its tensor inference hold no reference cycle (:func:`.rules.nested_first`
  replaces a bound method of the audit), so a file's parsed trees are freed by reference
  counting, not left to the cyclic collector: auditing the corpora leaves no cyclic garbage.
* The segmented parse hands the audit its last reach (``ModuleScope.roots_reach``): the same
  list, item by item, as walking the reach again, for the files' own roots and for extra roots.
* ``segments._method_indents`` (one search over the class text) gives the former line-by-line
  indents on every class of the corpora and on texts with other line breaks.
* :func:`.evidence.function_text` (memoised) gives the unmemoised text.

A canary per comparison shows that it sees a planted difference.
"""

from __future__ import annotations

import ast
import gc
from collections.abc import Callable

import pytest

import derivgraph.audit.static.rules as rules_mod
from derivgraph.audit.static import segments
from derivgraph.audit.static.evidence import FunctionTexts, function_text
from derivgraph.audit.static.module import (
    ExternalRoot,
    ModuleContext,
    _seeds,
    audit_module,
    parse_for_audit,
)
from derivgraph.audit.static.rules import nested_first
from derivgraph.audit.static.scope import ModuleScope, Reached, ancestors_index, regex_classes
from derivgraph.audit.static.segments import split_blocks
from tests.audit.static.expectations import CORPUS, EVIDENCE_CORPUS

_FILES = sorted(CORPUS.rglob("*.py")) + sorted(EVIDENCE_CORPUS.rglob("*.py"))


def _context() -> ModuleContext:
    bases: dict[str, set[str]] = {}
    for p in _FILES:
        for cls, found in regex_classes(p.read_text()):
            bases.setdefault(cls, set()).update(found)
    return ModuleContext(ancestors_index(bases), {})


# ---- no reference cycle: the trees are freed by reference counting ------------------------------

def _cyclic_garbage(audit: Callable[[], object]) -> list[str]:
    """Type names of the cyclic garbage ``audit`` leaves (collected with DEBUG_SAVEALL)."""
    was = gc.isenabled()
    gc.disable()
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        audit()
        gc.collect()
        names = [type(o).__name__ for o in gc.garbage]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        if was:
            gc.enable()
    return names


def _audit_corpus(context: ModuleContext) -> int:
    sites = 0
    for p in _FILES:
        text = p.read_text()
        try:
            found, _, _ = audit_module(text, p.name, p.stem, False, context)
        except SyntaxError:
            continue
        sites += len(found)
    return sites


def test_auditing_the_corpora_leaves_no_cyclic_garbage():
    context = _context()
    counted: list[int] = []
    garbage = _cyclic_garbage(lambda: counted.append(_audit_corpus(context)))
    assert counted[0] > 50  # the corpora were audited and found sites
    assert "FunctionAudit" not in garbage and "ModuleScope" not in garbage
    assert not any(name in {"Module", "FunctionDef", "Name", "Call"} for name in garbage)


def test_cycle_check_goes_red_on_an_audit_bound_into_its_inference(monkeypatch):
    """Canary: the former design (the audit's bound method handed to its own inference)."""
    real_init = rules_mod.FunctionAudit.__init__

    def init(self, *args, **kwargs):
        real_init(self, *args, **kwargs)
        self.inf.returns_tensor = self._planted  # the bound method: audit -> inf -> audit

    monkeypatch.setattr(rules_mod.FunctionAudit, "__init__", init)
    monkeypatch.setattr(rules_mod.FunctionAudit, "_planted",
                        lambda self, call: self._returns_tensor(call), raising=False)
    context = _context()
    garbage = _cyclic_garbage(lambda: _audit_corpus(context))
    assert "FunctionAudit" in garbage and "FunctionDef" in garbage


def test_nested_first_sees_nested_functions_added_after_it_was_made():
    module_calls: list[str] = []

    def module(call: ast.Call) -> bool:
        module_calls.append(ast.unparse(call))
        return False

    nested: set[str] = set()
    returns = nested_first(nested, module)
    call = ast.parse("helper(x)", mode="eval").body
    other = ast.parse("torch.empty(3)", mode="eval").body
    assert isinstance(call, ast.Call) and isinstance(other, ast.Call)
    assert returns(call) is False and module_calls == ["helper(x)"]
    nested.add("helper")  # the audit found ``def helper`` returning a tensor
    assert returns(call) is True and module_calls == ["helper(x)"]
    assert returns(other) is False and module_calls == ["helper(x)", "torch.empty(3)"]


# ---- the reach the parse computed is the reach the audit walked ---------------------------------

def _scopes(context: ModuleContext) -> list[tuple[ModuleScope, list[Reached]]]:
    """(scope, a fresh walk of its reach) for every corpus file, with its own roots and with
    each of its module functions and methods as an extra root."""
    out = []
    for p in _FILES:
        text = p.read_text()
        try:
            scope = parse_for_audit(text, p.name, context)
        except SyntaxError:
            continue
        out.append((scope, scope.reached(None)))
        whole = ModuleScope(ast.parse(text), context.ancestors)
        extras = [ExternalRoot(0, None, name, (name,), frozenset()) for name in whole.functions]
        extras += [ExternalRoot(0, cls, m, (f"{cls}.{m}",), frozenset({cls}))
                   for cls, info in whole.classes.items() for m in info.methods]
        for extra in extras[:12]:
            try:
                scope = parse_for_audit(text, p.name, context, extra=[extra])
            except SyntaxError:
                continue
            out.append((scope, scope.reached(_seeds(scope, [extra]))))
    return out


def _same_reach(a: list[Reached], b: list[Reached]) -> bool:
    return len(a) == len(b) and all(
        x.func is y.func and x.cls == y.cls and x.qualname == y.qualname and x.via == y.via
        and x.root_classes == y.root_classes and dict(x.consts) == dict(y.consts)
        and x.initial_load_only == y.initial_load_only and x.model_load_only == y.model_load_only
        and x.handed == y.handed for x, y in zip(a, b))


def test_roots_reach_is_the_walked_reach_on_the_corpora():
    pairs = _scopes(_context())
    assert len(pairs) > 100
    assert sum(1 for scope, _ in pairs if scope.roots_reach) > 50
    for scope, walked in pairs:
        assert scope.roots_reach is not None
        assert _same_reach(scope.roots_reach, walked)


def test_reach_comparison_goes_red_on_a_dropped_item():
    """Canary: a reach missing its last function is told apart."""
    pairs = [(s, w) for s, w in _scopes(_context()) if w]
    scope, walked = pairs[0]
    assert scope.roots_reach is not None
    assert not _same_reach(scope.roots_reach[:-1], walked)


# ---- method indents in one search ---------------------------------------------------------------

def _former_indents(source: str) -> list[str]:
    lines = source.splitlines(keepends=True)
    return [m.group(1) for ln in lines[1:] if (m := segments._METHOD_LINE.match(ln))]


def _class_sources() -> list[str]:
    out = []
    for p in _FILES:
        text = p.read_text()
        out += [text[b.start:b.end] for b in split_blocks(text) if b.kind == "class"]
    return out


_ODD = ["class A:\n    def f(self):\f\n        pass\n    def g(self): pass\n",
        "class A:\r\n    def f(self):\r\n        pass\r\n\tdef g(self): pass\r\n",
        "class A:\x0c    def f(self): pass\n  async  def g(self): pass\n",
        "class A:\u2028    def f(self): pass\n    x = 1\n",
        "class A: pass",
        "class A:\n    async def f(self): pass\n    def\tg (self): pass\n    x = 'def h'\n"]


def test_method_indents_are_the_former_line_by_line_ones():
    sources = _class_sources() + _ODD
    assert len(sources) > 100
    assert sum(1 for s in sources if _former_indents(s)) > 80
    for source in sources:
        assert segments._method_indents(source, source.splitlines(keepends=True)) \
            == _former_indents(source), source[:80]


@pytest.mark.parametrize("text", _ODD[2:4])
def test_method_indent_comparison_goes_red_without_the_line_break_fallback(text):
    """Canary: one search over a text with other line breaks is not the line-by-line result."""
    first = text.find("\n")
    one_search = [m.group(1) for m in segments._METHOD_LINES.finditer(text, first + 1)] \
        if first >= 0 else []
    assert one_search != _former_indents(text)


# ---- function_text memoised (scan30: per evidence pass, :class:`FunctionTexts`) ---------------

def test_function_text_memo_is_the_unmemoised_text():
    checked = 0
    memo = FunctionTexts()
    for p in _FILES:
        text = p.read_text()
        scope = ModuleScope(ast.parse(text), {})
        names = list(scope.functions) + [f"{c}.{m}" for c, info in scope.classes.items()
                                         for m in info.methods] + ["no_such_function"]
        for name in names:
            assert memo(text, name) == function_text(text, name)
            assert memo(text, name) == function_text(text, name)  # from the memo
            checked += bool(memo(text, name))
    assert checked > 200
    assert not hasattr(function_text, "cache_info")  # no process-wide cache keeps the texts


# ---- source_dropped's 0-element allocation test (scan30: memoised per evidence pass) ------------

def _tree() -> dict[str, str]:
    tree = {p.name: p.read_text() for p in _FILES}
    tree["emptied.py"] = "x = 1\nself.w13.weight = torch.nn.Parameter(torch.empty(0, 2))\n"
    tree["named_only.py"] = "self.w2.weight = w2\n"
    tree["other.py"] = "self.gate.weight.data = torch.empty((0, 4))\n"
    return tree


_DERIVED = ["self.w13.weight", "layer.w2.weight", "self.gate.weight", "self.w1_scale",
            "self.proj", "layer.w13_weight_scale", None]


def _former_dropped(derives_from, tree, monkeypatch):
    """``source_dropped``'s tree search before scan29 (every file tested on each call)."""
    from tests.audit.static.test_static_scan30_paths import former_source_dropped
    return former_source_dropped(derives_from, "", tree)


def test_source_dropped_memo_gives_the_former_answers(monkeypatch):
    from derivgraph.audit.static.platforms import source_dropped
    tree = _tree()
    answers = [source_dropped(d, "", tree) for d in _DERIVED]
    assert answers == [_former_dropped(d, tree, monkeypatch) for d in _DERIVED]
    assert answers[0] is not None and "emptied.py:2" in answers[0]
    assert answers[2] is not None and "other.py:1" in answers[2]
    assert answers[1] is None  # named, never emptied
    memo: dict[str, bool] = {}
    again = [source_dropped(d, "", tree, allocates=memo) for d in _DERIVED]  # one pass's memo
    assert again == answers and memo["emptied.py"] and not memo["named_only.py"]


def test_source_dropped_comparison_goes_red_on_a_wrong_memo(monkeypatch):
    """Canary: a memo that misses an allocation changes the answer."""
    from derivgraph.audit.static import platforms
    tree = _tree()
    right = platforms.source_dropped("self.w13.weight", "", tree)
    assert platforms.source_dropped("self.w13.weight", "", tree, allocates={}) == right
    wrong = {"emptied.py": False}
    assert platforms.source_dropped("self.w13.weight", "", tree, allocates=wrong) != right
