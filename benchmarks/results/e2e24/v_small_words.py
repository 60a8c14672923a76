"""A: every AtAddresses checks its storage words (two NumPy gathers) first; B: a set of at most
16 tensors is compared exactly (torch's one C++ loop over their data addresses), no words."""
from derivgraph.addresses import AtAddresses, addresses_equal

orig = AtAddresses.intact
SMALL = 16
sizes = set()


def small_exact(self):
    sizes.add(len(self.tensors))
    if len(self.tensors) <= SMALL:
        return addresses_equal(self.tensors, self.ptrs, self._indices)
    return orig(self)


def use(arm, plan, model):
    AtAddresses.intact = orig if arm == "A" else small_exact
