"""The JSON Schema of spec files, for editors and CI."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from derivgraph.spec.model import SpecFile

__all__ = ["SCHEMA_PATH", "spec_schema"]

SCHEMA_PATH = Path(__file__).with_name("schema") / "spec.schema.json"


def spec_schema() -> dict[str, Any]:
    """The JSON Schema of a spec file (``derivgraph schema`` prints it)."""
    schema = SpecFile.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "derivgraph spec file"
    return schema
