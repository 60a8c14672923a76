"""``def_text``: one function's source text found by name, by indent."""

from __future__ import annotations

from derivgraph.audit.static.def_text import def_text

SOURCE = '''def top(a):
    return a


class C:
    async def top(self,
                  b):
        x = (1,
    )
        return b

    def other(self):
        pass
'''


def test_the_first_def_at_any_indent_up_to_the_next_line_at_its_indent():
    assert def_text(SOURCE, "top") == "def top(a):\n    return a\n\n\n"
    method = def_text(SOURCE, "top", indent=r"[ \t]+")
    assert method.startswith("    async def top(self,") and method.rstrip().endswith("return b")
    assert "other" not in method  # ends at the next def at the method's indent
    assert def_text(SOURCE, "other", indent="") == ""  # no top-level `other`
    assert def_text(SOURCE, "missing") == ""
