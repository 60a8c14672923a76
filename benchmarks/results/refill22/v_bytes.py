import numpy as np
from derivgraph import dict_versions as DV, addresses as AD
NEW = {"changed": DV.DictVersions.changed, "unchanged": DV.DictVersions.unchanged, "kept": AD.Addresses.kept}
def old_changed(self):
    if self._tags is None: return []
    self._last = now = self._view[self._index]
    return (now != self._tags).nonzero()[0].tolist()
def old_unchanged(self):
    return self._tags is None or not (self._view[self._index] != self._tags).any()
def old_kept(self):
    ex = getattr(self, "_old", None)
    if ex is None:
        ex = self._old = (np.frombuffer(self._expected[0], dtype=np.int64), np.frombuffer(self._expected[1], dtype=np.int64))
    impls, stores = ex
    return not (self._impls[self._impl_index] != impls).any() and not (self._stores[self._store_index] != stores).any()
def use(arm, plan, model):
    if arm == "A":
        DV.DictVersions.changed, DV.DictVersions.unchanged, AD.Addresses.kept = old_changed, old_unchanged, old_kept
    else:
        DV.DictVersions.changed, DV.DictVersions.unchanged, AD.Addresses.kept = NEW["changed"], NEW["unchanged"], NEW["kept"]
