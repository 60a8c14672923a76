"""What keeps a storage alive, and what the collector sees, on this torch.

1. A storage's Python object, once made by ``untyped_storage()``, is kept by its StorageImpl
   (PyObject preservation): dropping the list leaves every object young; a second call
   returns the same object.
2. ``t.data = new`` releases the startup storage when nothing else holds it: the tensor alone
   does not keep its startup memory.
3. Holders without a Python object per storage:
   a. ``torch._C.ScriptList`` of detached aliases: the aliases' Python wrappers are preserved
      too (one young Tensor each).
   b. a DLPack capsule (``to_dlpack``): not tracked by the collector, but it holds the same
      TensorImpl (no alias for a contiguous tensor): after ``.data =`` its memory is freed.
   c. ``torch.jit.script`` (a C++ list of aliases): deprecated here (FutureWarning).
"""
import gc
import warnings

import torch
from torch.utils.dlpack import to_dlpack

N = 10000
ts = [torch.zeros(4) for _ in range(N)]
gc.collect()
gc.disable()
n0 = len(gc.get_objects(0))
ss = list(map(torch.Tensor.untyped_storage, ts))
with_list = len(gc.get_objects(0)) - n0
del ss
print(f"1. young after untyped_storage() of {N}: {with_list}; after dropping the list: "
      f"{len(gc.get_objects(0)) - n0}; same object on a second call: "
      f"{ts[0].untyped_storage() is ts[0].untyped_storage()}")


def freed_after_repoint(keep):
    """Whether the startup memory of a tensor re-pointed by ``.data =`` is released while
    ``keep(t)`` is held: its old values overwritten after the allocator reuses it."""
    t = torch.arange(1000.)
    ptr = t.data_ptr()
    held = keep(t)
    t.data = torch.zeros(5)
    gc.collect()
    fill = [torch.full((1000,), -1.0) for _ in range(50)]  # reuse freed blocks
    view = torch.empty(0).set_(held, 0, (1000,)) if isinstance(held, torch.UntypedStorage) \
        else None
    if view is not None:
        return not torch.equal(view, torch.arange(1000.))
    back = torch.from_dlpack(held) if type(held).__name__ == "PyCapsule" else held
    del fill
    return back.data_ptr() != ptr or not torch.equal(back, torch.arange(1000.))


print("2. tensor alone (nothing kept):", "startup memory freed/reused" if freed_after_repoint(
    lambda t: t) else "kept")
print("   its untyped_storage() kept:", "freed" if freed_after_repoint(
    torch.Tensor.untyped_storage) else "kept (values intact)")

n0 = len(gc.get_objects(0))
lst = torch._C.ScriptList([t.detach() for t in ts])
print(f"3a. ScriptList of {N} detached aliases: young +{len(gc.get_objects(0)) - n0} "
      f"(the wrappers preserved)")
cap = to_dlpack(ts[0])
print(f"3b. DLPack capsule tracked by gc: {gc.is_tracked(cap)}; memory after .data =:",
      "freed" if freed_after_repoint(to_dlpack) else "kept")


def _alias(x: torch.Tensor) -> torch.Tensor:
    return x.detach()


with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    torch.jit.script(_alias)
print("3c. torch.jit.script warns:", [type(w.message).__name__ for w in caught][:1])
