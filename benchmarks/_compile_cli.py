"""The command line the compile-at-scale benchmarks share: ``--size``, ``--json`` and the output.

``bench_compile_phases``, ``bench_compile_records`` and ``bench_compile_floor`` each take the
number of derived tensors of the scaling workload, print one JSON object and, with ``--json``,
write the same object to a file.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

__all__ = ["compile_parser", "emit", "write_json"]


def compile_parser(doc: str | None) -> argparse.ArgumentParser:
    """A parser with ``--size`` (derived tensors, default 100000) and ``--json`` (output file)."""
    parser = argparse.ArgumentParser(description=doc)
    parser.add_argument("--size", type=int, default=100000, help="derived tensors")
    parser.add_argument("--json", default=None, help="write the result here")
    return parser


def write_json(result: dict[str, Any], path: str | None) -> None:
    """Write ``result`` as indented JSON to ``path`` (nothing when ``path`` is None)."""
    if path:
        with open(path, "w") as f:
            json.dump(result, f, indent=1)


def emit(result: dict[str, Any], path: str | None) -> None:
    """Print ``result`` as indented JSON and, when ``path`` is given, write it there too."""
    print(json.dumps(result, indent=1))  # noqa: T201
    write_json(result, path)
