"""The source text of one function definition, found by name in a file's text (no parse)."""

from __future__ import annotations

import re

__all__ = ["def_end", "def_text"]

_INDENT = re.compile(r"[ \t]*")


def def_text(text: str, name: str, indent: str = r"[ \t]*") -> str:
    """The text of the first ``def name(`` (or ``async def``) in ``text`` whose indent matches
    the regex ``indent``, up to the next line at its indent or less ("" when there is none)."""
    m = re.search(rf"^({indent})(?:async[ \t]+)?def[ \t]+{re.escape(name)}[ \t]*\(", text, re.M)
    if m is None:
        return ""
    return text[m.start():def_end(text, m.start())]


def def_end(text: str, start: int) -> int:
    """The end of the definition whose line starts at ``start``: the next line at its indent or
    less that is not a closing bracket (``len(text)`` when there is none)."""
    indent = _INDENT.match(text, start).end() - start
    end = re.compile(rf"^[ \t]{{0,{indent}}}(?![)\]])\S", re.M).search(
        text, text.find("\n", start) + 1)
    return end.start() if end else len(text)
