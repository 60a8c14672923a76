"""CPU toy: prefetch offloader's _cpu_storage after a kernel-format style refill.

Uses vLLM's own _CpuParamOffloader (vllm/model_executor/offloader/prefetch.py) on a
toy Linear. A CPU tensor stands in for the GPU static buffer slot. After post-init
(sync_cpu_storage + assign_static_buffer), a reload writes new values into the kept
parameter (param.data is the static buffer); the next prefetch copies _cpu_storage
into that slot (start_onload_to_static does gpu_buffer.copy_(cpu_storage)).
"""
import torch

from vllm.model_executor.offloader import prefetch

# No GPU here: pinned memory is unavailable, so take the unpinned branch (:707).
prefetch.should_pin_memory = lambda: False
torch.manual_seed(0)
lin = torch.nn.Linear(4, 4, bias=False)
off = prefetch._CpuParamOffloader(lin, "weight")  # :661 store, param.data -> _cpu_storage
print("after init: param is _cpu_storage:", lin.weight.data.data_ptr() == off._cpu_storage.data_ptr())
# "PWAL" replaces param.data with a processed CPU tensor (device_loading_context style)
lin.weight.data = lin.weight.data * 2
off.sync_cpu_storage()  # :705/:707 store
print("after sync: _cpu_storage ptr == param ptr:", off._cpu_storage.data_ptr() == lin.weight.data.data_ptr())
slot = torch.empty_like(off._cpu_storage)  # stands in for the GPU static buffer
off.assign_static_buffer(slot)
print("param now points at slot:", lin.weight.data.data_ptr() == slot.data_ptr())
print("_cpu_storage is separate from param:", off._cpu_storage.data_ptr() != lin.weight.data.data_ptr())
# a reload (layerwise copy-back or kernel-format copy_) writes into the kept parameter
new = torch.randn(4, 4)
lin.weight.data.copy_(new)
print("param holds new weights after reload:", torch.equal(lin.weight.data, new))
# next prefetch (start_onload_to_static): slot.copy_(_cpu_storage)
off._gpu_buffer.copy_(off._cpu_storage)
print("after next prefetch, param equals new weights:", torch.equal(lin.weight.data, new))
print("stale _cpu_storage restored old weights:", not torch.equal(lin.weight.data, new))
