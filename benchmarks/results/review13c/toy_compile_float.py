"""Position 34 (reading 3): does a compiled forward with vLLM's dropped guards
(compilation/wrapper.py:146, guard_filter_fn -> all False) keep a Python float module
attribute baked after the attribute is rebound (as FlintNvFp4LinearKernel's PWAL
rebinds layer.flint_global_scale on a layerwise reload)?"""

import torch
from torch import nn


class Lin(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(4, 4), requires_grad=False)
        self.flint_global_scale = 2.0

    def forward(self, x):
        out = torch.empty(x.shape[0], 4)
        return torch.addmm(out, x, self.w.t(), beta=0, alpha=self.flint_global_scale, out=out)


m = Lin()
x = torch.randn(3, 4)
for guards in ("dropped (vLLM)", "kept (default)"):
    opts = {"guard_filter_fn": lambda g: [False for _ in g]} if guards.startswith("dropped") else {}
    torch._dynamo.reset()
    m.flint_global_scale = 2.0
    f = torch.compile(m, backend="eager", options=opts) if opts else torch.compile(m, backend="eager")
    f(x)
    m.flint_global_scale = 5.0  # the PWAL rebinding on reload
    got = f(x)
    want = 5.0 * (x @ m.w.t())
    print(f"guards {guards}: uses new alpha: {torch.allclose(got, want)}")
