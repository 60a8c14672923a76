"""A regular-expression alternation of many words, written as a trie.

``re`` tries the branches of ``a|b|c`` one after another at every place a search stops, so an
alternation of a hundred attribute names costs a hundred tries at every ``.`` of the tree.
Written as a trie (``w(?:13_(?:weight(?:_scale)?)|2_weight)``), each character is tried once.
It matches the same words; where several of them match at one place, the plain alternation takes
the first listed that lets the rest of the pattern match and the trie the longest: the two agree
wherever the rest accepts at most one of them there (a ``\\b`` after the group, or a character
that cannot continue a word).

Example::

    import re
    from derivgraph.audit.static.alternation import words_pattern
    dotted = re.compile(rf"\\.({words_pattern(['w13_weight', 'w13_weight_scale'])})\\b")
    assert dotted.search("x = layer.w13_weight_scale[0]").group(1) == "w13_weight_scale"
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["words_pattern"]

_Trie = dict[str, "_Trie"]
_END = ""  # the key that marks a word ending at a node


def words_pattern(words: Iterable[str]) -> str:
    """A pattern that matches exactly the (non-empty) ``words``: their trie, escaped."""
    root: _Trie = {}
    for word in words:
        if not word:
            continue
        node = root
        for ch in word:
            node = node.setdefault(ch, {})
        node[_END] = {}
    return _pattern(root)


def _pattern(node: _Trie) -> str:
    branches = [re.escape(ch) + _pattern(sub) for ch, sub in sorted(node.items()) if ch]
    if not branches:
        return ""
    body = branches[0] if len(branches) == 1 else f"(?:{'|'.join(branches)})"
    return f"(?:{body})?" if _END in node else body
