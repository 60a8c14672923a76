"""A: moved tags found by a ufunc (!=, nonzero, tolist); B: by the tags as Python ints (tolist,
map(ne), compress): no ufunc."""
import operator
from itertools import compress, count
from derivgraph import dict_versions as DV
NEW = DV.DictVersions.changed
def changed_list(self):
    if self._tags is None:
        return []
    self._last = now = self._read()
    if now.tobytes() == self._bytes:
        return []
    was = self._tags.tolist()
    return list(compress(count(), map(operator.ne, now.tolist(), was)))
def use(arm, plan, model):
    DV.DictVersions.changed = NEW if arm == "A" else changed_list
