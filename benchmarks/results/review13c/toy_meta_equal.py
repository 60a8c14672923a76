"""Position 33: FlintNvfp4Experts._repack starts with torch.equal on w13_weight_scale_2.
During a layerwise reload that parameter is a meta tensor (restore_layer_on_meta), the
module's own load_weights copies into it (copy_ into meta is accepted) and, its
_loaded_names set being already full, calls _repack at once. This shows both steps."""

import torch

gs = torch.empty(4, 2, device="meta")  # w13_weight_scale_2 restored on meta
gs.data[1, 0].copy_(torch.tensor(1.0))  # FlintNvfp4Experts.load_weights copy
print("copy_ into meta param: accepted")
try:
    torch.equal(gs[:, 0], gs[:, 1])
    print("torch.equal on meta: returned")
except NotImplementedError as e:
    print("torch.equal on meta raises NotImplementedError:", str(e).splitlines()[0][:80])
