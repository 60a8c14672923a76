"""The source text of one function definition, found by name in a file's text (no parse)."""

from __future__ import annotations

import re

__all__ = ["def_text"]


def def_text(text: str, name: str, indent: str = r"[ \t]*") -> str:
    """The text of the first ``def name(`` (or ``async def``) in ``text`` whose indent matches
    the regex ``indent``, up to the next line at its indent or less ("" when there is none)."""
    m = re.search(rf"^({indent})(?:async[ \t]+)?def[ \t]+{re.escape(name)}[ \t]*\(", text, re.M)
    if m is None:
        return ""
    end = re.compile(rf"^[ \t]{{0,{len(m.group(1))}}}(?![)\]])\S", re.M).search(
        text, text.find("\n", m.end()) + 1)
    return text[m.start():end.start() if end else len(text)]
