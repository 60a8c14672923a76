"""The hook table: every vLLM binding derivgraph wraps, with the signature it was verified for.

One :class:`HookRow` per binding. A :attr:`HookKind.FUNCTION` row is a function where it is
defined; a :attr:`HookKind.BINDING` row is a module that imported that function by name
(``from x import f`` copies the reference at import time, so that module is patched too); a
:attr:`HookKind.METHOD` row is a class attribute (``Class.method``: one patch covers every
holder of the class). ``signature`` lists the parameter names as ``inspect.signature`` gives
them (``*args`` is ``args``); a wrapper is installed only over a target whose signature still
matches. To support a new vLLM see ``docs/vllm-support.md``.
"""

from __future__ import annotations

import enum
import importlib.metadata
from dataclasses import dataclass

__all__ = [
    "TABLE", "VERIFIED_VLLM_VERSIONS", "HookKind", "HookRow", "definitions", "installed_version",
    "rows_for",
]

#: vLLM releases whose source this table was checked against, line by line.
VERIFIED_VLLM_VERSIONS: tuple[str, ...] = ("0.33.0",)


def installed_version(package: str = "vllm") -> str | None:
    """The installed distribution's version from its metadata (no import)."""
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


class HookKind(enum.Enum):
    """How a row's attribute is patched."""

    FUNCTION = "function"  # defined in ``module``
    BINDING = "binding"  # imported by name into ``module`` from ``defined_in``
    METHOD = "method"  # ``Class.method`` defined in ``module``


@dataclass(frozen=True)
class HookRow:
    """One patched binding: where, what, how, and the parameter names verified."""

    module: str
    attribute: str
    kind: HookKind
    signature: tuple[str, ...]
    defined_in: str  # the defining module (== module for FUNCTION and METHOD rows)

    @property
    def function(self) -> str:
        """The wrapped function's name (the method name for METHOD rows)."""
        return self.attribute.rsplit(".", 1)[-1]

    @property
    def key(self) -> str:
        """``defined_in:attribute``: one wrapper per key, shared by its bindings."""
        return f"{self.defined_in}:{self.attribute}"

    def __str__(self) -> str:
        return f"{self.module}.{self.attribute}"


_ML = "vllm.model_executor.model_loader"
_RELOAD = f"{_ML}.reload"
_WT = "vllm.distributed.weight_transfer"
_WORKER = "vllm.v1.worker.gpu_worker"
_KIMI_K3_DECODE = "vllm.models.kimi_k3.nvidia.specialized_decode.runtime"


def _function(module: str, name: str, signature: tuple[str, ...],
              bound_in: tuple[str, ...]) -> list[HookRow]:
    rows = [HookRow(module, name, HookKind.FUNCTION, signature, module)]
    rows += [HookRow(b, name, HookKind.BINDING, signature, module) for b in bound_in]
    return rows


def _method(module: str, attribute: str, signature: tuple[str, ...]) -> HookRow:
    return HookRow(module, attribute, HookKind.METHOD, signature, module)


TABLE: tuple[HookRow, ...] = (
    *_function(f"{_ML}.utils", "process_weights_after_loading",
               ("model", "model_config", "target_device"),
               (f"{_ML}.base_loader", f"{_ML}.weight_cache.daemon",
                f"{_ML}.weight_cache.ipc_loader")),
    *_function(f"{_RELOAD}.layerwise", "initialize_layerwise_reload", ("model",),
               (_RELOAD, f"{_RELOAD}.inplace", f"{_RELOAD}.torchao_decorator")),
    *_function(f"{_RELOAD}.layerwise", "finalize_layerwise_reload", ("args", "kwargs"),
               (_RELOAD, f"{_RELOAD}.inplace", f"{_RELOAD}.torchao_decorator",
                "vllm.model_executor.models.expert_substitution")),
    *_function(f"{_RELOAD}.inplace", "reload_weights",
               ("vllm_config", "model", "weights_iterator", "weights_path",
                "is_checkpoint_format"),
               ("vllm.v1.worker.gpu_model_runner", "vllm.v1.worker.gpu.model_runner")),
    *_function(f"{_ML}.checkpoint_weight_patch", "load_checkpoint_weight_patches",
               ("model", "patches", "max_chunk_bytes", "validate_unique_indices"),
               (f"{_WT}.sparse_nccl_engine",)),
    _method(f"{_WT}.base", "WeightTransferEngine.__init__",
            ("self", "config", "vllm_config", "device", "model")),
    _method(_WORKER, "Worker.wake_up", ("self", "tags")),
    _method("vllm.compilation.cuda_graph", "CUDAGraphWrapper.__call__", ("self", "args", "kwargs")),
    # Kimi-K3 specialized decode: keep the packed MoE front on its module (kimi_k3_front.py)
    *_function(f"{_KIMI_K3_DECODE}.providers", "pack_front", ("moe", "rank", "tp"),
               (f"{_KIMI_K3_DECODE}.decode",)),
    _method("vllm.models.kimi_k3.nvidia.model", "KimiLinearForCausalLM.build_specialized_decode",
            ("self",)),
)


def definitions(table: tuple[HookRow, ...] = TABLE) -> list[HookRow]:
    """The FUNCTION and METHOD rows (one per wrapper)."""
    return [r for r in table if r.kind is not HookKind.BINDING]


def rows_for(module: str, table: tuple[HookRow, ...] = TABLE) -> list[HookRow]:
    """The rows patched in ``module``: definitions first."""
    rows = [r for r in table if r.module == module]
    return sorted(rows, key=lambda r: r.kind is HookKind.BINDING)
