"""Registry-driven coverage sweep over vLLM 0.33.0's kernels, experts and attention backends.

For every class vLLM can select — linear kernels (``_POSSIBLE_KERNELS``, the INT8/FP8 scaled-mm
registries), every concrete MoE experts class, and every attention backend impl with its own
post-load step — the sweep gives exactly one verdict (:class:`Verdict`):

* **spec**: a spec of the shipped library targets it (its tensors are declared);
* **stable** / **guarded** / **recapture** (dynamic, CPU): the object is built (and its post-load
  step run) twice, the way a reload rebuilds it, and the guard compares the two: nothing moved,
  everything that moved was restored in place, or something needs a recapture;
* **static** reasons, from reading its post-load source (and, for experts, which vLLM rebuilds
  on every post-load step, its constructor): no post-load step and no tensor state; registered
  parameters only (vLLM's layerwise copy-back keeps them); or plain attributes the guard keeps.

Regenerate ``docs/coverage.md`` (a test checks it is current)::

    python3 scripts/vllm_coverage.py --write docs/coverage.md
"""

from __future__ import annotations

import argparse
import ast
import enum
import importlib
import inspect
import logging
import pkgutil
import sys
import textwrap
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

logger = logging.getLogger("derivgraph.coverage")

ROOT = Path(__file__).resolve().parents[1]
LINEAR_REGISTRIES = ("_POSSIBLE_KERNELS", "_POSSIBLE_INT8_KERNELS", "_POSSIBLE_FP8_KERNELS",
                     "_POSSIBLE_FP8_BLOCK_KERNELS", "_POSSIBLE_WFP8A16_KERNELS")


class Family(enum.Enum):
    LINEAR = "linear kernel"
    EXPERTS = "MoE experts"
    ATTENTION = "attention impl"


class Verdict(enum.Enum):
    SPEC = "spec"
    STABLE = "stable: built twice on CPU, nothing moved"
    GUARDED = "guarded: built twice on CPU, the guard restored every moved slot"
    RECAPTURE = "recapture required: built twice on CPU, the guard reports it"
    NO_STATE = "static: no post-load step and no tensor state of its own"
    REGISTERED = "static: post-load rewrites registered parameters only (copy-back keeps them)"
    ATTRIBUTES = "static: post-load stores plain attributes; the guard keeps their tensors"


@dataclass
class Row:
    family: Family
    name: str
    module: str
    verdict: Verdict
    detail: str


# ---- enumeration ------------------------------------------------------------------------------

def linear_classes() -> dict[str, type]:
    import vllm.model_executor.kernels.linear as linear

    out: dict[str, type] = {}
    for registry in LINEAR_REGISTRIES:
        for kernels in getattr(linear, registry).values():
            for cls in kernels:
                out.setdefault(cls.__name__, cls)
    return out


def _subclasses(cls: type) -> Iterator[type]:
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def experts_classes() -> dict[str, type]:
    import vllm.model_executor.layers.fused_moe.experts as package
    from vllm.model_executor.layers.fused_moe.modular_kernel import FusedMoEExperts

    for info in pkgutil.iter_modules(package.__path__):
        try:
            importlib.import_module(f"{package.__name__}.{info.name}")
        except (ImportError, RuntimeError, AttributeError) as exc:  # a backend absent here
            logger.info("experts module %s not importable here: %s", info.name, exc)
    out: dict[str, type] = {}
    for cls in _subclasses(FusedMoEExperts):  # the fused_moe package's, whatever else imported
        if not inspect.isabstract(cls) and cls.__module__.startswith(package.__name__):
            out.setdefault(f"{cls.__name__}", cls)
    return out


def attention_classes() -> dict[str, type]:
    from vllm.v1.attention.backend import AttentionImplBase
    from vllm.v1.attention.backends.registry import AttentionBackendEnum

    out: dict[str, type] = {}
    for member in AttentionBackendEnum:
        try:
            impl = member.get_class().get_impl_cls()
        except (ImportError, RuntimeError, AttributeError, ValueError, NotImplementedError) as exc:
            logger.info("attention backend %s not importable here: %s", member.name, exc)
            continue
        owner = _defining_class(impl, "process_weights_after_loading")
        if owner is not None and owner is not AttentionImplBase:
            out.setdefault(impl.__name__, impl)
    return out


# ---- static reading ---------------------------------------------------------------------------

_BASES = ("MPLinearKernel", "ScaledMMLinearKernel", "FP8ScaledMMLinearKernel",
          "Int8ScaledMMLinearKernel", "Fp8BlockScaledMMKernel", "FusedMoEExperts",
          "FusedMoEExpertsModular", "FusedMoEExpertsMonolithic", "AttentionImplBase",
          "AttentionImpl", "MLAAttentionImpl", "object")


def _defining_class(cls: type, name: str) -> type | None:
    for klass in cls.__mro__:
        if name in vars(klass):
            return klass
    return None


def _methods(cls: type, name: str) -> list[Callable[..., Any]]:
    """``name`` as defined by each class of the MRO below the registry bases."""
    out = []
    for klass in cls.__mro__:
        if klass.__name__ in _BASES:
            break
        fn = vars(klass).get(name)
        if callable(fn):
            out.append(fn)
    return out


@dataclass
class Stores:
    """What a method body stores: plain attributes on ``self`` / the layer, registered tensors."""

    own: set[str]
    layer: set[str]
    registered: int
    built: set[str]  # own attributes assigned the result of a call or an expression

    def merge(self, other: Stores) -> None:
        self.own |= other.own
        self.layer |= other.layer
        self.registered += other.registered
        self.built |= other.built


def _plain(value: ast.expr | None) -> bool:
    """A value that is certainly no tensor: a constant, a comparison, a name string."""
    if isinstance(value, (ast.Constant, ast.Compare, ast.BoolOp, ast.JoinedStr)):
        return True
    if isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.Not):
        return True
    return isinstance(value, ast.Attribute) and value.attr.endswith("_name")


def _read(fn: Callable[..., Any]) -> Stores:
    stores = Stores(set(), set(), 0, set())
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return stores
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
            targets = [node.target]
        if _plain(getattr(node, "value", None)):
            continue
        for target in targets:
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
                if target.attr == "data":
                    stores.registered += 1
                elif target.value.id == "self":
                    stores.own.add(target.attr)
                    if isinstance(getattr(node, "value", None), (ast.Call, ast.BinOp)):
                        stores.built.add(target.attr)
                elif target.value.id == "layer":
                    stores.layer.add(target.attr)
            elif isinstance(target, ast.Attribute) and target.attr == "data":
                stores.registered += 1
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in ("replace_parameter", "_transform_param", "register_parameter",
                        "update_tensor_inplace"):
                stores.registered += 1
            elif name == "register_buffer":
                persistent = [k for k in node.keywords if k.arg == "persistent"]
                if persistent and isinstance(persistent[0].value, ast.Constant) and \
                        persistent[0].value.value is False:
                    stores.layer.add("<non-persistent buffer>")
                else:
                    stores.registered += 1
            elif name == "setattr" and node.args and isinstance(node.args[0], ast.Name):
                (stores.own if node.args[0].id == "self" else stores.layer).add("<setattr>")
    return stores


def static_verdict(cls: type, family: Family) -> tuple[Verdict, str]:
    stores = Stores(set(), set(), 0, set())
    for fn in _methods(cls, "process_weights_after_loading"):
        stores.merge(_read(fn))
    init_own: set[str] = set()
    if family is Family.EXPERTS:  # rebuilt by every post-load step: its constructor counts
        for fn in _methods(cls, "__init__"):
            init_own |= _read(fn).built
    attrs = sorted(stores.own | stores.layer | init_own)
    if attrs:
        return Verdict.ATTRIBUTES, ", ".join(attrs)
    if stores.registered:
        return Verdict.REGISTERED, f"{stores.registered} parameter rewrite(s)"
    return Verdict.NO_STATE, ""


# ---- spec coverage ----------------------------------------------------------------------------

def spec_targets() -> dict[str, list[str]]:
    """Class name -> names of the library specs whose target names it."""
    from derivgraph import load_specs

    out: dict[str, list[str]] = {}
    for spec in load_specs(sorted((ROOT / "specs").glob("*.yaml"))):  # the shipped library
        t = spec.target
        for name in [*t.object_class, *t.quant_method_class]:
            out.setdefault(name.rsplit(".", 1)[-1], []).append(spec.name)
    return out


def covering_specs(cls: type, targets: dict[str, list[str]]) -> list[str]:
    names: list[str] = []
    for klass in cls.__mro__:
        names += targets.get(klass.__name__, [])
    return sorted(set(names))


# ---- dynamic runs (CPU) -----------------------------------------------------------------------

def _moe_config() -> Any:
    import torch
    from vllm.model_executor.layers.fused_moe.activation import MoEActivation
    from vllm.model_executor.layers.fused_moe.config import (
        FusedMoEConfig,
        FusedMoEParallelConfig,
        RoutingMethodType,
    )

    return FusedMoEConfig(
        num_experts=4, experts_per_token=2, hidden_dim=256, intermediate_size=128,
        num_local_experts=4, num_logical_experts=4, activation=MoEActivation.SILU,
        device="cpu", routing_method=RoutingMethodType.Renormalize,
        moe_parallel_config=FusedMoEParallelConfig.make_no_parallel(),
        in_dtype=torch.bfloat16)


def _fp8_scales() -> dict[str, Any]:
    import torch

    g = torch.Generator().manual_seed(0)
    return {"w13_weight_scale": 0.01 + torch.rand(4, generator=g),
            "w2_weight_scale": 0.01 + torch.rand(4, generator=g),
            "w13_input_scale": torch.tensor(0.5), "w2_input_scale": torch.tensor(0.7)}


def _fp8_quant_config(layer: Any) -> Any:
    """A per-tensor FP8 quant config over the layer's scales, as a post-load step builds."""
    from vllm.model_executor.layers.fused_moe.config import fp8_w8a8_moe_quant_config

    return fp8_w8a8_moe_quant_config(
        w1_scale=layer.w13_weight_scale, w2_scale=layer.w2_weight_scale,
        a1_scale=layer.w13_input_scale, a2_scale=layer.w2_input_scale)


def build_experts_twice(cls: type) -> tuple[Verdict, str] | None:
    """Build ``cls`` as a post-load step does, snapshot, rebuild, restore; None if it cannot
    be built on this machine."""
    import torch
    from torch import nn

    from derivgraph.guard import Guard

    layer = nn.Module()
    for name, value in _fp8_scales().items():  # the scales are the layer's loaded parameters
        layer.register_parameter(name, nn.Parameter(value, requires_grad=False))

    def build() -> Any:
        moe, qc = _moe_config(), _fp8_quant_config(layer)
        if "W4A8" in cls.__name__:
            strides = torch.full((4,), 256, dtype=torch.int64)
            return cls(moe, qc, strides, strides.clone(), 128)
        return cls(moe, qc)

    saved = torch.accelerator.current_device_index
    torch.accelerator.current_device_index = lambda: "cpu"  # TRT-LLM experts ask for one
    try:
        try:
            layer.experts = build()
        except Exception as exc:  # noqa: BLE001 - any failure means "not buildable here"
            logger.info("%s not buildable on CPU: %s", cls.__name__, exc)
            return None
        guard = Guard()
        snap = guard.snapshot(layer)
        layer.experts = build()  # the rebuild every post-load step performs
        report = guard.restore(layer)
    finally:
        torch.accelerator.current_device_index = saved
    if report.recapture:
        return Verdict.RECAPTURE, "; ".join(c.describe() for c in report.recapture)
    moved = [c.path for c in [*report.restored, *report.copied_only]]
    if moved:
        return Verdict.GUARDED, ", ".join(p.removeprefix("experts.") for p in moved)
    return Verdict.STABLE, f"{len(snap.guarded)} tensor(s)"


# ---- the sweep --------------------------------------------------------------------------------

def sweep(dynamic: bool = True) -> list[Row]:
    targets = spec_targets()
    rows: list[Row] = []
    families = ((Family.LINEAR, linear_classes()), (Family.EXPERTS, experts_classes()),
                (Family.ATTENTION, attention_classes()))
    for family, classes in families:
        for name, cls in sorted(classes.items()):
            specs = covering_specs(cls, targets)
            if specs:
                verdict, detail = Verdict.SPEC, ", ".join(specs)
            else:
                verdict, detail = static_verdict(cls, family)
                if dynamic and family is Family.EXPERTS and verdict is Verdict.ATTRIBUTES:
                    verdict, detail = build_experts_twice(cls) or (verdict, detail)
            rows.append(Row(family, name, cls.__module__.removeprefix("vllm."), verdict, detail))
    return rows


def render(rows: list[Row]) -> str:
    from collections import Counter

    counts = Counter(r.verdict for r in rows)
    lines = [
        "# vLLM 0.33.0 coverage",
        "",
        "Generated by `python3 scripts/vllm_coverage.py --write docs/coverage.md` from vLLM's own",
        "registries (linear `_POSSIBLE_*` kernel lists, every concrete MoE experts class, every",
        "attention impl with its own post-load step); `tests/vllm/test_coverage.py` checks it is",
        "current. Every class has one verdict: a **spec** of the shipped library declares its",
        "tensors; a **dynamic** verdict comes from building it twice on CPU under the guard; a",
        "**static** verdict from reading its post-load step (and, for experts, which are rebuilt",
        "by every post-load step, its constructor). Plain attributes no spec declares are kept",
        "by the guard (on by default in the vLLM plugin); see docs/vllm-support.md.",
        "",
        "| verdict | classes |",
        "|---|---|",
        *(f"| {v.value} | {counts.get(v, 0)} |" for v in Verdict),
        "",
    ]
    for family in Family:
        lines += [f"## {family.value}", "", "| class | module | verdict | detail |",
                  "|---|---|---|---|"]
        for r in (r for r in rows if r.family is family):
            detail = r.detail.replace("|", "\\|")
            lines.append(f"| `{r.name}` | `{r.module}` | {r.verdict.name.lower()} | {detail} |")
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", type=Path, help="write the markdown here")
    args = parser.parse_args(argv)
    text = render(sweep())
    if args.write:
        args.write.write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main())
