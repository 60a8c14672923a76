"""Benchmark the runtime-audit census on a synthetic 61-layer MoE-shaped model.

Every layer looks like a vLLM decoder layer after its post-load step: attention with an impl
object (a Python float scale, a decode-path tensor, a ``functools.partial`` holding a
workspace, a back-reference to its module), an MoE layer whose quant method holds a quant
config (a dataclass of frozen descriptors aliasing the scales) and a kernel whose experts
object holds CUTLASS-style stride constants (one aliased), a list of workspaces, a dict of
constants and a closure; one quant-config object is shared by every layer.

Times ``take_census`` walk-only (``fingerprints=False``, what an address check needs), with
fingerprints (every byte hashed, what a stale check needs), and ``diff_censuses`` of two
fingerprinted censuses. Also vLLM strict mode's reload check
(:mod:`derivgraph.audit.runtime.reload_watch`): ``watch`` before a reload (walk, sampled digests of
loaded tensors, full digests of the rest) and ``check`` after it (walk again, moved,
undeclared, stale in place, changed floats), next to the address-only check it replaced (two
walks), and the spec-value check strict mode adds after a reload (a fresh evaluation of the
plan's formulas, compared with the live tensors; ``SPEC`` declares 4 tensors per layer).
Medians of ``--repeat`` runs (default 3). ``--against TREE`` times strict ``watch`` and
``check`` with this tree's derivgraph and another checkout's, in alternating subprocesses,
and prints both medians and their ratio.

    python3 benchmarks/bench_census.py --layers 61
    python3 benchmarks/bench_census.py --layers 61 --device cuda
    python3 benchmarks/bench_census.py --layers 61 --against /work/main  # side by side
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import time
from dataclasses import dataclass

import torch
from torch import nn

from derivgraph.audit.runtime.census import take_census
from derivgraph.audit.runtime.diff import diff_censuses
from derivgraph.audit.runtime.reload_watch import watch


@dataclass(frozen=True)
class Desc:
    scale: torch.Tensor
    alpha_or_gscale: torch.Tensor


@dataclass
class MoEQuantConfig:
    a1: Desc
    a2: Desc
    w1: Desc
    w2: Desc


class SharedQuantConfig:
    """One object referenced by every layer, like vLLM's QuantizationConfig."""

    def __init__(self) -> None:
        self.activation_scheme = "static"
        self.weight_block_size = None
        self.ignored_layers: list[str] = []


class Experts:
    def __init__(self, e: int, h: int, n: int, qc: MoEQuantConfig, device: str):
        self.quant_config = qc
        self.ab_strides1 = torch.full((e,), h, dtype=torch.int64, device=device)
        self.ab_strides2 = torch.full((e,), n, dtype=torch.int64, device=device)
        self.c_strides1 = torch.full((e,), 2 * n, dtype=torch.int64, device=device)
        self.c_strides2 = self.ab_strides1
        self.workspaces = [torch.empty(64, h, device=device) for _ in range(2)]
        self.consts = {"gemm1_alpha": torch.full((e,), 1.702, device=device),
                       "gemm1_beta": torch.ones(e, device=device)}
        limit = torch.full((e,), 7.0, device=device)
        self.clamp = lambda x: x.clamp(max=limit)  # a closure cell


class MoEKernel:
    def __init__(self, experts: Experts):
        self.fused_experts = experts


class QuantMethod:
    def __init__(self, layer: nn.Module, shared: SharedQuantConfig, device: str):
        self.quant_config = shared
        w1, w2 = layer.w13_weight_scale, layer.w2_weight_scale
        a1, a2 = layer.w13_input_scale, layer.w2_input_scale
        self.moe_quant_config = MoEQuantConfig(Desc(a1, 1 / a1), Desc(a2, 1 / a2),
                                               Desc(w1, w1 * a1), Desc(w2, w2 * a2))
        e, n, h = layer.w13_weight.shape[0], layer.w2_weight.shape[2], layer.w2_weight.shape[1]
        self.moe_kernel = MoEKernel(Experts(e, h, n, self.moe_quant_config, device))


class FusedMoE(nn.Module):
    def __init__(self, e: int, h: int, n: int, shared: SharedQuantConfig, device: str,
                 dtype: torch.dtype):
        super().__init__()

        def param(*shape: int, dt: torch.dtype = torch.float32) -> nn.Parameter:
            return nn.Parameter(torch.randn(shape, device=device).to(dt), requires_grad=False)

        self.gate = nn.Linear(h, e, bias=False, device=device)
        self.w13_weight = param(e, 2 * n, h, dt=dtype)
        self.w2_weight = param(e, h, n, dt=dtype)
        self.w13_weight_scale = param(e)
        self.w2_weight_scale = param(e)
        self.w13_input_scale = param()
        self.w2_input_scale = param()
        self.quant_method = QuantMethod(self, shared, device)


def _kernel(x: torch.Tensor, workspace: torch.Tensor, scale: float) -> torch.Tensor:
    return x * scale


class AttentionImpl:
    def __init__(self, layer: nn.Module, h: int, device: str):
        self.layer = layer  # a back-reference, as attention layers and impls keep
        self._k_scale_float = float(layer.k_scale)
        self.W_UK_T = torch.randn(h, h // 4, device=device)
        self.run = functools.partial(_kernel, workspace=torch.empty(128, device=device),
                                     scale=self._k_scale_float)


class Attention(nn.Module):
    def __init__(self, h: int, device: str, dtype: torch.dtype):
        super().__init__()
        self.qkv_proj = nn.Linear(h, 2 * h, bias=False, device=device, dtype=dtype)
        self.o_proj = nn.Linear(h, h, bias=False, device=device, dtype=dtype)
        self.k_scale = nn.Parameter(torch.tensor(0.5, device=device), requires_grad=False)
        self.v_scale = nn.Parameter(torch.tensor(0.5, device=device), requires_grad=False)
        self.register_buffer("_q_scale_inv", torch.ones(1, device=device), persistent=False)
        self.impl = AttentionImpl(self, h, device)


class DecoderLayer(nn.Module):
    def __init__(self, e: int, h: int, n: int, shared: SharedQuantConfig, device: str,
                 dtype: torch.dtype):
        super().__init__()
        self.input_layernorm = nn.RMSNorm(h, device=device)
        self.self_attn = Attention(h, device, dtype)
        self.post_attention_layernorm = nn.RMSNorm(h, device=device)
        self.mlp = FusedMoE(e, h, n, shared, device, dtype)


class Model(nn.Module):
    def __init__(self, layers: int, e: int, h: int, n: int, device: str, dtype: torch.dtype):
        super().__init__()
        shared = SharedQuantConfig()
        self.embed_tokens = nn.Embedding(1024, h, device=device)
        self.layers = nn.ModuleList(DecoderLayer(e, h, n, shared, device, dtype)
                                    for _ in range(layers))
        self.norm = nn.RMSNorm(h, device=device)


def _median(fn, repeat: int, device: str) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        if device == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        result = fn()
        if device == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


#: Declares the quant-config descriptors of every MoE layer (4 derived tensors per layer), so
#: the spec-value check (``derivgraph.audit.runtime.spec_values``) has a plan to verify.
SPEC = """
version: 1
specs:
  - name: bench-moe-descriptors
    target: {module_class: FusedMoE, object: quant_method.moe_quant_config}
    derived:
      - {name: alpha_or_gscale, owner: quant_method.moe_quant_config.a1, kind: attribute,
         formula: 1.0 / w13_input_scale}
      - {name: alpha_or_gscale, owner: quant_method.moe_quant_config.a2, kind: attribute,
         formula: 1.0 / w2_input_scale}
      - {name: alpha_or_gscale, owner: quant_method.moe_quant_config.w1, kind: attribute,
         formula: w13_weight_scale * w13_input_scale}
      - {name: alpha_or_gscale, owner: quant_method.moe_quant_config.w2, kind: attribute,
         formula: w2_weight_scale * w2_input_scale}
"""


def _spec_values(model: nn.Module, repeat: int, device: str) -> dict[str, float]:
    from derivgraph import compile_plan, load_spec_text
    from derivgraph.audit.runtime.spec_values import verify_spec_values

    plan = compile_plan(model, load_spec_text(SPEC, "bench_census.py"))
    seconds, check = _median(lambda: verify_spec_values(plan), repeat, device)
    assert check.ok() and check.checked == len(plan), check.as_dict()
    return {"spec_values_s": round(seconds, 4), "spec_values_checked": check.checked}


def _strict_only(model: nn.Module, repeat: int, device: str) -> dict[str, float]:
    watch(model)  # warm-up
    watch_s, record = _median(lambda: watch(model), repeat, device)
    check_s, _ = _median(lambda: record.check(model), repeat, device)
    return {"strict_watch_s": watch_s, "strict_check_s": check_s}


def _side_by_side(args: argparse.Namespace) -> None:
    """Time strict watch/check with this tree's derivgraph and ``--against``'s, alternating."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    trees = {"this": str(Path(__file__).resolve().parent.parent),
             "against": str(Path(args.against).resolve())}
    argv = [sys.executable, str(Path(__file__).resolve()), "--strict-only",
            "--layers", str(args.layers), "--experts", str(args.experts),
            "--hidden", str(args.hidden), "--device", args.device, "--dtype", args.dtype,
            "--repeat", str(args.repeat)]
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
    for _ in range(args.rounds):
        for name, tree in trees.items():  # alternate, so load drifts hit both alike
            env = {**os.environ, "PYTHONPATH": tree}
            out = subprocess.run(argv, env=env, check=True, capture_output=True, text=True)
            runs[name].append(json.loads(out.stdout.strip().splitlines()[-1]))
    result: dict[str, object] = {"layers": args.layers, "device": args.device,
                                 "rounds": args.rounds, "repeat": args.repeat,
                                 "against": trees["against"]}
    for key in ("strict_watch_s", "strict_check_s"):
        this = statistics.median(r[key] for r in runs["this"])
        other = statistics.median(r[key] for r in runs["against"])
        result[key] = {"this": round(this, 4), "against": round(other, 4),
                       "ratio": round(this / other, 3)}
    print(json.dumps(result))  # noqa: T201 - a script's output


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--layers", type=int, default=61)
    parser.add_argument("--experts", type=int, default=16)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="bfloat16")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--against", metavar="TREE",
                        help="another derivgraph checkout: time strict watch/check with both, "
                             "in alternating subprocesses, and print the ratios")
    parser.add_argument("--rounds", type=int, default=5,
                        help="subprocess pairs for --against (default 5)")
    parser.add_argument("--strict-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.against:
        _side_by_side(args)
        return
    torch.manual_seed(0)
    dtype = getattr(torch, args.dtype)
    with torch.no_grad():
        model = Model(args.layers, args.experts, args.hidden, args.hidden // 2, args.device, dtype)
    if args.strict_only:
        print(json.dumps(_strict_only(model, args.repeat, args.device)))  # noqa: T201
        return

    take_census(model)  # warm-up: first-touch costs are not the census's
    walk_s, walk = _median(lambda: take_census(model, fingerprints=False), args.repeat,
                           args.device)
    full_s, full = _median(lambda: take_census(model), args.repeat, args.device)
    other = take_census(model)
    diff_s, diff = _median(lambda: diff_censuses(full, other, other), args.repeat, args.device)
    watch_s, record = _median(lambda: watch(model), args.repeat, args.device)
    check_s, checked = _median(lambda: record.check(model), args.repeat, args.device)
    tensors = full.tensors()
    result = {
        "layers": args.layers, "device": args.device, "dtype": args.dtype,
        "torch": torch.__version__, "objects": full.objects, "tensors": len(tensors),
        "alias_paths": sum(len(e.aliases) for e in tensors.values()),
        "scalars": len(full.scalars()), "bytes": full.nbytes(),
        "census_walk_s": round(walk_s, 4), "census_fingerprint_s": round(full_s, 4),
        "diff_s": round(diff_s, 4), "findings": len(diff.findings), "repeat": args.repeat,
        "strict_watch_s": round(watch_s, 4), "strict_check_s": round(check_s, 4),
        "strict_findings": len(checked.moved) + len(checked.undeclared)
        + len(checked.unrefreshed) + len(checked.scalars),
        **_spec_values(model, args.repeat, args.device),
    }
    assert walk.tensors().keys() == tensors.keys()
    print(json.dumps(result))  # noqa: T201 - a script's output


if __name__ == "__main__":
    main()
