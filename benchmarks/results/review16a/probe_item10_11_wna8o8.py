"""Items 10/11: CompressedTensorsWNA8O8Int._input_scale / _output_scale.
Real scheme object and its real process_weights_after_loading (_take_act_scale clones the
loaded scale param and deletes it from the layer); the MP linear kernel is stubbed
(its PWAL needs CUDA ops). vLLM 0.33.0 layerwise + kernel-format reload on CPU."""
import torch
from torch import nn

from toy import ToyMethod, ToyModel, first_load, kernel_format_reload, layerwise_reload, param
from vllm.model_executor.layers.quantization.compressed_tensors.schemes.compressed_tensors_wNa8o8 import (  # noqa: E501
    CompressedTensorsWNA8O8Int,
)


class StubKernel:
    def process_weights_after_loading(self, layer):
        pass


scheme = CompressedTensorsWNA8O8Int(num_bits=4, strategy="channel", has_input_act=True,
                                    has_output_act=True)
scheme.kernel = StubKernel()


class Lin(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_parameter("weight_packed", param(8, 2, dtype=torch.int32))
        self.register_parameter("weight_scale", param(8, 1))
        self.register_parameter("input_scale", param(1))
        self.register_parameter("output_scale", param(1))
        self.quant_method = ToyMethod(lambda layer: None,
                                      lambda qm, layer: scheme.process_weights_after_loading(layer))


def ck(s_in, s_out):
    return {"layer.weight_packed": torch.zeros(8, 2, dtype=torch.int32),
            "layer.weight_scale": torch.ones(8, 1),
            "layer.input_scale": torch.tensor([s_in]), "layer.output_scale": torch.tensor([s_out])}


m = ToyModel(Lin())
first_load(m, ck(0.5, 0.25))
old_in, old_out = scheme._input_scale, scheme._output_scale
p_in, p_out = old_in.data_ptr(), old_out.data_ptr()
print("first load: _input_scale", old_in.tolist(), "_output_scale", old_out.tolist(),
      "| input_scale still on layer:", hasattr(m.layer, "input_scale"))
layerwise_reload(m, ck(2.0, 4.0))
print("layerwise reload: new _input_scale", scheme._input_scale.tolist(),
      "new object:", scheme._input_scale is not old_in,
      "data_ptr moved:", scheme._input_scale.data_ptr() != p_in,
      "| old object (what a captured graph reads) still", old_in.tolist())
print("layerwise reload: new _output_scale", scheme._output_scale.tolist(),
      "data_ptr moved:", scheme._output_scale.data_ptr() != p_out,
      "| old object still", old_out.tolist())
try:
    kernel_format_reload(m, {"layer.input_scale": torch.tensor([8.0])})
    print("kernel-format reload of input_scale: ok")
except Exception as exc:
    print("kernel-format reload of input_scale RAISES:", type(exc).__name__, exc)
