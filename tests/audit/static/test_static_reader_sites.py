"""Where a read goes (evid27): the kernel call that takes a multi-line argument or a local
list, a plain alias judged by its uses (a staging copy bound for its shape before it is bound for
its copy back), and the backend module a store onto an outside layer names through a registry.

Corpus: tests/fixtures/static_corpus_evidence/reader_site_*.py (the layer class reading its own
attribute, the slow backend, scanned before the fast backend; the registry; the stores),
where ``# reads: ATTR`` marks the reader the audit must name and ``# other reader: ATTR`` the
read it named before these rules. Each canary turns one rule off and sees the old reader or
kind again.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from derivgraph.audit.static import named_modules, read_sites, readers
from derivgraph.audit.static.scan import scan
from tests.audit.static.expectations import reader_marks
from tests.resources import static_reader_agreement as agreement

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "static_corpus_evidence"
FILES = [FIXTURES / f"reader_site_{n}.py"
         for n in ("a_self", "b_slow", "registry", "fast", "store", "cases")]
KINDS = {
    "w_rs_sf": "kernel-call",  # an argument line of ``self._wrapper.run(``
    "w_rs_helped": "forward",  # an argument line of a plain helper
    "w_rs_meta": "forward",  # an argument line of a class built (``FusedSiteMetadata(``)
    "w_rs_listed": "kernel-call",  # a list ``ops.fused_moe_kernel`` takes
    "w_rs_logged": "forward",  # a list a helper takes
    "_rs_staged": "forward",  # bound for the copy back (``buffer.copy_``), not the shape read
    "_rs_shaped": "forward",  # only a shape read: the alias line stays the reader
    "_rs_k_scale": "forward",  # the backend the store names, not the scan's first reader
    "w_rs_matmul": "kernel-call",  # ``x @ self.w``
    "w_rs_made": "kernel-call",  # ``dispatch_site_gemm()(...)``: named by the maker
    "w_rs_kwargs": "kernel-call",  # ``dict(...)`` looked through to ``kernel(**kwargs)``
    "w_rs_packed": "kernel-call",  # ``api.mm(`` over several lines
}


def _marks(kind: str) -> dict[str, set[tuple[str, int]]]:
    return reader_marks(FILES, kind)


def _readers() -> dict[str, tuple[tuple[str, int], str, str]]:
    got = {}
    for f in scan(FILES, specs=[], jobs=1).findings:
        where = agreement.audit_location(f.reader)
        if where is not None:
            got[f.attr] = ((Path(where[0]).name, where[1]), f.reader_kind, f.reader)
    return got


def test_every_marked_reader_and_kind_is_the_one_named():
    got = _readers()
    expected = _marks("reads")
    assert set(expected) == set(KINDS)
    assert {a: got[a][:2] for a in KINDS} == {a: (next(iter(expected[a])), k)
                                                for a, k in KINDS.items()}


@pytest.mark.parametrize(("rule", "changed"), [
    ("callee", {"w_rs_sf", "w_rs_listed", "w_rs_made", "w_rs_kwargs", "w_rs_packed"}),
    ("alias", {"_rs_staged"}),
    ("named", {"_rs_k_scale"}),
    ("class", {"w_rs_meta"}),
    ("matmul", {"w_rs_matmul"}),
    ("maker", {"w_rs_made"}),
    ("container", {"w_rs_kwargs"}),
])
def test_canary_without_the_rule_the_old_reader_comes_back(monkeypatch, rule, changed):
    if rule == "callee":
        monkeypatch.setattr(read_sites, "kernel_callee", lambda *args: "")
    elif rule == "alias":
        monkeypatch.setattr(read_sites, "alias_uses", lambda *args: None)
    elif rule == "matmul":
        monkeypatch.setattr(readers, "_MATMUL", re.compile(r"(?!)"))
    elif rule == "maker":
        monkeypatch.setattr(read_sites, "_opening", lambda text, start, close: close + 1)
    elif rule == "container":
        monkeypatch.setattr(read_sites, "_CONTAINERS", frozenset())
    elif rule == "named":
        monkeypatch.setattr(named_modules, "named_files", lambda *args: frozenset())
    else:  # a class's construction counted as a launch when its name has a kernel word
        def words(callee: str) -> bool:
            text = callee.replace("_", " ") + "("
            return bool(readers._KERNEL_CALL.search(text) or readers._KERNEL_WRAPPER.search(text))
        monkeypatch.setattr(readers, "_is_kernel", words)
    got = _readers()
    expected = _marks("reads")
    wrong = {a for a in KINDS if got[a][:2] != (next(iter(expected[a])), KINDS[a])}
    assert wrong == changed
    if rule in ("callee", "matmul", "maker", "container"):
        assert {got[a][1] for a in changed} == {"forward"}
    elif rule == "class":
        assert got["w_rs_meta"][1] == "kernel-call"
    else:  # the read named before these rules
        others = _marks("other reader")
        assert all(got[a][0] in others[a] for a in changed)
