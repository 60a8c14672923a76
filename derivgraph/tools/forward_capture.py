"""Capture a model's forward the way a CUDA graph does, and replay it (the demo and tests).

On CUDA this is a real ``torch.cuda.CUDAGraph``. On CPU it is a
:class:`~derivgraph.runtime.replay.CpuGraph` recording replayed against the tensor objects it
read. Both poison their output before each replay, so a replay that computes nothing cannot
pass for a correct one.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from derivgraph.runtime.replay import CpuGraph

__all__ = ["CapturedGraph", "capture"]


class CapturedGraph:
    """A captured forward with a static input and a static output."""

    def __init__(self, fn: Callable[[torch.Tensor], torch.Tensor], static_input: torch.Tensor):
        self.static_input = static_input
        self.device = static_input.device
        if self.device.type == "cuda":
            self._capture_cuda(fn)
        else:
            self._capture_cpu(fn)

    def _capture_cuda(self, fn: Callable[[torch.Tensor], torch.Tensor]) -> None:
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream), torch.no_grad():
            for _ in range(2):
                fn(self.static_input)
        torch.cuda.current_stream().wait_stream(stream)
        self._graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self._graph), torch.no_grad():
            self.static_output = fn(self.static_input)
        self.external_ids: set[int] = set()

    def _capture_cpu(self, fn: Callable[[torch.Tensor], torch.Tensor]) -> None:
        recorder = CpuGraph()
        with torch.no_grad(), recorder:
            result = fn(self.static_input)
        self._recorder = recorder
        self._result_slot = recorder.slot_of(result)
        self.static_output = result.detach().clone()
        self.external_ids = set(recorder.externals)
        recorder.drop_capture_refs()

    def reads(self) -> list[torch.Tensor]:
        """The tensor objects the captured graph reads (CPU capture only)."""
        return list(self._recorder.externals.values()) if hasattr(self, "_recorder") else []

    def replay(self) -> torch.Tensor:
        """Poison the output, replay, and return the static output."""
        self.static_output.fill_(float("nan"))
        if self.device.type == "cuda":
            self._graph.replay()
            torch.cuda.synchronize()
        else:
            with torch.no_grad():
                env = self._recorder.replay_slots()
            self.static_output.copy_(env[self._result_slot])
        return self.static_output


def capture(
    fn: Callable[[torch.Tensor], torch.Tensor], static_input: torch.Tensor
) -> CapturedGraph:
    """Capture ``fn(static_input)``: a CUDA graph on CUDA, a :class:`CpuGraph` on CPU."""
    return CapturedGraph(fn, static_input)
