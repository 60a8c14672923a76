"""A stamped layer's source nodes take the layout its probes proved equal to the template's
(no second read of the tensor); a layer whose source layout differs is not stamped and reads
its own."""

from __future__ import annotations

import torch

from derivgraph import compile_plan
from derivgraph.compiler.stamp import stamping
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec


def test_stamped_sources_share_the_templates_layout() -> None:
    model = scaling_model(4)
    with stamping(True):
        plan = compile_plan(model, [scaling_spec()])
    assert plan.graph.stamped == 3
    nodes = plan.graph.nodes
    first = nodes["layers.1.scale"]  # layer 0 is the template: it read its tensor
    for i in (1, 2, 3):
        node = nodes[f"layers.{i}.scale"]
        assert node.shape is first.shape and node.stride is first.stride  # the template's fact
        assert (node.shape, node.stride, node.dtype, node.device) == \
            ((8,), (1,), torch.float32, torch.device("cpu"))


def test_a_layer_of_another_layout_reads_its_own() -> None:
    model = scaling_model(3)
    layer = model.layers[2]
    layer.scale = torch.nn.Parameter(torch.rand(16, requires_grad=False)[::2],
                                     requires_grad=False)  # strided: another fact
    with stamping(True):
        plan = compile_plan(model, [scaling_spec()])
    assert plan.graph.stamped == 1
    node = plan.graph.nodes["layers.2.scale"]
    assert (node.shape, node.stride) == ((8,), (2,))
