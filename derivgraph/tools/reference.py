"""The reference modules (``derivgraph/tools/reference_models.py``) as a trace input.

``reference_model()`` is the model with checkpoint A loaded, before its post-load work;
``reference_post_load(model)`` is that work: the drafter's fused K/V build (vLLM does it at
the end of ``load_weights``) and ``process_weights_after_loading``. ``derivgraph trace`` with
no ``--model`` uses them::

    derivgraph trace --model derivgraph.tools.reference:reference_model \
        --post-load derivgraph.tools.reference:reference_post_load
"""

from __future__ import annotations

import torch
from torch import nn

from derivgraph.tools.reference_models import RefConfig, ReferenceModel, make_weights

__all__ = ["reference_model", "reference_post_load"]


def reference_model() -> nn.Module:
    """The reference model with weights A copied in, its post-load step not yet run."""
    model = ReferenceModel(RefConfig())
    params = dict(model.named_parameters())
    with torch.no_grad():
        for name, value in make_weights(RefConfig(), 0).items():
            params[name].copy_(value)
    return model


def reference_post_load(model: nn.Module) -> None:
    """Everything the reference model derives after loading."""
    model.drafter.build_fused_kv()
    model.process_weights_after_loading()
