"""A: torch's nn.Module write methods as they are; B: __setattr__, __delattr__,
register_parameter and register_buffer each wrapped by a pass-through Python function (no
logging at all) for the whole reload: the floor of what any Python-level write log in the
reload window adds (vLLM's layerwise reload makes 151 such calls per reload on the tiny Llama)."""
import torch.nn as nn

orig = {n: nn.Module.__dict__[n] for n in
        ("__setattr__", "__delattr__", "register_parameter", "register_buffer")}


def _wrap(f):
    def w(self, *a, **k):
        return f(self, *a, **k)
    return w


wrapped = {n: _wrap(f) for n, f in orig.items()}


def use(arm, plan, model):
    for n in orig:
        setattr(nn.Module, n, orig[n] if arm == "A" else wrapped[n])
