"""JSON-schema clean-up for tool schemas that strict MCP clients accept.

Some clients reject ``$ref``; pydantic emits ``$defs`` for nested models. ``inline_refs``
replaces every local reference by a copy of its definition.
"""

from __future__ import annotations

import copy
from typing import Any

__all__ = ["inline_refs"]


def inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """Return ``schema`` with every ``#/$defs/X`` reference inlined and ``$defs`` removed.

    Raises:
        ValueError: a reference is not local or is recursive (no finite inline form).
    """
    definitions = schema.get("$defs", {})

    def resolve(node: Any, seen: tuple[str, ...]) -> Any:
        if isinstance(node, dict):
            if "$ref" in node:
                ref = node["$ref"]
                if not ref.startswith("#/$defs/"):
                    raise ValueError(f"cannot inline non-local $ref {ref}")
                name = ref.removeprefix("#/$defs/")
                if name in seen:
                    raise ValueError(f"recursive $ref {ref} cannot be inlined")
                merged = {**copy.deepcopy(definitions[name]), **{k: v for k, v in node.items() if k != "$ref"}}
                return resolve(merged, (*seen, name))
            return {key: resolve(value, seen) for key, value in node.items() if key not in ("$defs", "$schema")}
        if isinstance(node, list):
            return [resolve(item, seen) for item in node]
        return node

    return resolve(schema, ())
