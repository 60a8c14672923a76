"""The property chains (``TreeIndex.property_chains``) of one class lineage, looked up by class.

``FunctionAudit`` needs, for every reached function, the ``"Class.prop" -> "obj.field"`` entries
whose class is in its lineage, keyed by ``prop``. Filtering the whole tree's table per function
was a visible part of the scan; the table is grouped by class once and reused while the same
table object (of the same size) comes back.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

__all__ = ["lineage_chains"]

_Grouped = dict[str, list[tuple[int, str, str]]]
_last: list[tuple[Mapping[str, str], int, _Grouped]] = []  # the last table and its grouping


def _grouped(chains: Mapping[str, str]) -> _Grouped:
    if _last and _last[0][0] is chains and _last[0][1] == len(chains):
        return _last[0][2]
    grouped: _Grouped = {}
    for pos, (key, chain) in enumerate(chains.items()):
        owner, prop = key.split(".", 1)
        grouped.setdefault(owner, []).append((pos, prop, chain))
    _last[:] = [(chains, len(chains), grouped)]  # holds the table: its id is not reused
    return grouped


def lineage_chains(chains: Mapping[str, str], lineage: Iterable[str]) -> dict[str, str]:
    """``{prop: chain}`` for the entries ``"Class.prop"`` of ``chains`` whose class is in
    ``lineage``; the same dict as filtering ``chains`` in its order (a later class's entry
    for the same ``prop`` wins)."""
    if not chains:
        return {}
    grouped = _grouped(chains)
    found = sorted(entry for owner in set(lineage) for entry in grouped.get(owner, ()))
    return {prop: chain for _, prop, chain in found}
