"""``source_tree.TextOffsets``: where a parsed node starts and ends in its module's text, with
lines counted as the tokenizer counts them and columns in UTF-8 bytes."""

from __future__ import annotations

import ast

from derivgraph.audit.static.source_tree import TextOffsets

# a form feed inside a comment (str.splitlines splits there; the tokenizer does not), a
# non-ASCII string before the node on its line, and CRLF line ends
SOURCE = ("x = 1  # page\x0cbreak\r\n"
          "label = 'é→' ; y = select(backend)\r\n"
          "def f():\n"
          "    return Marlin\n")


def _node(tree: ast.Module, kind: type, name: str) -> ast.AST:
    return next(n for n in ast.walk(tree) if isinstance(n, kind)
                and getattr(n, "id", getattr(n, "attr", None)) == name)


def test_node_offsets_slice_the_node_out_of_the_text() -> None:
    tree = ast.parse(SOURCE)
    at = TextOffsets(SOURCE)
    for name in ("backend", "select", "Marlin", "y"):
        node = _node(tree, ast.Name, name)
        assert SOURCE[at.start(node):at.end(node)] == name
    call = next(n for n in ast.walk(tree) if isinstance(n, ast.Call))
    assert SOURCE[at.start(call):at.end(call)] == "select(backend)"


def test_canary_splitlines_offsets_miss_after_a_form_feed() -> None:
    tree = ast.parse(SOURCE)
    node = _node(tree, ast.Name, "Marlin")
    lines = SOURCE.splitlines(keepends=True)  # the reading this replaced
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    wrong = starts[node.lineno - 1] + node.col_offset
    assert SOURCE[wrong:wrong + len("Marlin")] != "Marlin"
    assert SOURCE[TextOffsets(SOURCE).start(node):][:6] == "Marlin"
