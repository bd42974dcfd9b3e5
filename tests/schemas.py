"""Helpers for validating objects against published CRD schemas in tests."""

from __future__ import annotations

from typing import Any


def strict(schema: Any) -> Any:
    """A CRD schema that rejects unknown fields, as the API server's structural pruning would
    drop them: additionalProperties false wherever properties are listed and nothing else is
    allowed."""
    if isinstance(schema, list):
        return [strict(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: strict(v) for k, v in schema.items()}
    if "properties" in out and "additionalProperties" not in out \
            and not out.get("x-kubernetes-preserve-unknown-fields"):
        out["additionalProperties"] = False
    return out
