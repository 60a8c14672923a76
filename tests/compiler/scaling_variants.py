"""Variants of the scaling workload's spec shared by the column tests."""

from __future__ import annotations

from derivgraph import DerivedTensor, Spec, Target
from derivgraph.tools.bench_scaling import scaling_spec


def spec_with_generic_rows() -> Spec:
    """The scaling spec plus an alias of a derived tensor and a formula over it: rows the
    columns leave to the per-row paths (decided one by one between column rows), and a derived
    column whose input is another derived column."""
    base = scaling_spec()
    return Spec(name="scaling", target=Target(module_class=["ScalingLayer"]),
                params=base.params,
                derived=[*base.derived,
                         DerivedTensor(name="inv_alias", kind="alias", of="inv"),
                         DerivedTensor(name="twice", kind="attribute", formula="inv * 2.0")])
