"""How tool arguments are read: exactly as the client sent them, under one type rule for every field.

The SDK's ``FuncMetadata.pre_parse_json`` runs ``json.loads`` on every string argument whose
annotation is not plain ``str``: a session named ``null`` or ``[1]`` (a ``str | None`` confirm)
arrived as ``None`` or a list, ``kind="null"`` as no filter, ``memory_id="null"`` as missing. Pydantic's
lax mode then read ``true`` as 1, ``"yes"`` as true and ``2.0`` as 2. ``StrictArguments`` replaces
both steps for every argument of every tool, present and future:

- a field that may hold a string gets the exact string sent, never parsed;
- an integer is a JSON integer, or a whole number written with a fraction (``2.0``; JSON Schema's
  ``integer``), or a string of decimal digits (``"5"``: field case B27, some clients send numbers
  so); never a boolean, never a fraction (``2.5``);
- a number (``importance``) is a JSON number or a string holding one (``"0.5"``); never a boolean;
- a boolean is only JSON ``true`` or ``false``;
- a list or object is JSON, or a string holding its JSON (``supersedes='["..."]'``: Claude Desktop
  sends them so); this is the only parse, and only for fields that can never be a string.

Anything else fails validation in strict mode; ``argument_error`` turns that into one line.
``checked_tool`` builds every tool with these rules, and refuses argument names a tool does not take.
"""

from __future__ import annotations

import json
import re
import types
from collections.abc import Callable
from typing import Any, Literal, Union, get_args, get_origin

from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools.base import Tool
from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata
from mcp_types import ToolAnnotations
from pydantic import ValidationError

from mcp_memory.errors import InvalidInput
from mcp_memory.schema import inline_refs
from mcp_memory.unpaired import first_unpaired

__all__ = ["TYPE_RULE", "CheckedTool", "StrictArguments", "checked_tool"]

TYPE_RULE = (
    "Arguments are JSON of the types shown; unknown names are refused. An integer may be sent as a string "
    "of digits (\"5\") and a number as a string holding one (\"0.5\"); booleans are never numbers, fractions "
    "never integers, and a boolean is only true or false. Strings are kept exactly as sent."
)
"""The rule in one paragraph, published as the description of every tool's input schema."""

Kind = Literal["string", "integer", "number", "boolean", "json", "other"]

_DIGITS = re.compile(r"-?[0-9]{1,30}")  # a longer string stays a string and is refused as one
_JSON_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]{0,30})(?:\.[0-9]{1,30})?(?:[eE][+-]?[0-9]{1,3})?")


def _kind(annotation: Any) -> Kind:
    """The JSON kind a field takes; a field that admits a string is a string field."""
    members = get_args(annotation) if get_origin(annotation) in (Union, types.UnionType) else (annotation,)
    members = tuple(member for member in members if member is not type(None))
    origins = {get_origin(member) or member for member in members}
    if str in origins:
        return "string"
    if origins == {bool}:
        return "boolean"
    if origins == {int}:
        return "integer"
    if origins == {float}:
        return "number"
    if origins <= {list, dict}:
        return "json"
    return "other"


def _read(kind: Kind, value: Any) -> Any:
    """``value`` as the type rule reads it for a field of ``kind``; anything else is left for strict validation."""
    if kind == "integer":
        if isinstance(value, str) and _DIGITS.fullmatch(value):
            return int(value)
        if isinstance(value, float) and value.is_integer():
            return int(value)
    elif kind == "number":
        if isinstance(value, str) and _JSON_NUMBER.fullmatch(value):
            return float(value)
    elif kind == "json" and isinstance(value, str):
        try:
            parsed = json.loads(value)
        except (ValueError, RecursionError):
            return value
        return parsed if isinstance(parsed, list | dict) else value
    return value


_JSON_KINDS = {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "a list",
               dict: "an object", type(None): "null"}


def _json_kind(value: Any) -> str:
    if isinstance(value, float) and not value.is_integer():
        return "a number with a fraction"
    return _JSON_KINDS.get(type(value), "another kind of value")


def _held_json(error: dict[str, Any]) -> str:
    """For a list or object field sent a string that starts as JSON would (``[`` or ``{``; such a
    string is read as its JSON, ``arguments.py``) but does not parse: say so, so a typo in
    hand-written JSON is not reported as a mere string."""
    value = error.get("input")
    if error["type"] not in ("dict_type", "list_type") or not isinstance(value, str):
        return ""
    if not value.lstrip().startswith(("[", "{")):
        return ""
    return " that is not valid JSON"


def argument_error(errors: list[dict[str, Any]]) -> InvalidInput:
    """One line naming the first argument that failed the tool's schema (pydantic's ``errors()``).

    The SDK validates arguments against each tool's signature before the tool runs and would
    otherwise return pydantic's multi-line report with a web link. The line names the argument
    (``supersedes``, or ``supersedes.0`` for an item), what it should be, and the JSON kind
    received (never the value, which may be long), plus how many more arguments failed; missing
    arguments are named all at once.
    """
    names = [".".join(str(part) for part in error["loc"]) or "arguments" for error in errors]
    missing = [name for name, error in zip(names, errors) if error["type"] == "missing"]
    if missing:  # every missing argument at once, so one retry can fix them all
        where, problem = ", ".join(missing), "is required" if len(missing) == 1 else "are required"
        others = len(errors) - len(missing)
    else:
        first = errors[0]
        where, message = names[0], first["msg"]
        problem = message[:1].lower() + message[1:]
        problem += f"; got {_json_kind(first.get('input'))}{_held_json(first)}"
        others = len(errors) - 1
    if others:
        problem += f" (and {others} more problem(s) with the arguments)"
    return InvalidInput(where, problem)


class StrictArguments(FuncMetadata):
    """A tool's argument model validated under the type rule above, in pydantic's strict mode."""

    @classmethod
    def of(cls, metadata: FuncMetadata) -> StrictArguments:
        """The same argument model and output schema as ``metadata``, read strictly."""
        return cls(arg_model=metadata.arg_model, output_schema=metadata.output_schema,
                   output_model=metadata.output_model, wrap_output=metadata.wrap_output)

    def pre_parse_json(self, data: dict[str, Any]) -> dict[str, Any]:
        """Each argument as the type rule reads it; string fields are never parsed."""
        kinds: dict[str, Kind] = {}
        for name, field in self.arg_model.model_fields.items():
            kinds[field.alias or name] = _kind(field.annotation)
        return {name: _read(kinds.get(name, "other"), value) for name, value in data.items()}

    def validate_arguments(self, arguments_to_validate: dict[str, Any]) -> dict[str, Any]:
        """Validate in strict mode (no lax coercion) after ``pre_parse_json``.

        Raises:
            pydantic.ValidationError: an argument of the wrong JSON kind, or a missing one.
        """
        model = self.arg_model.model_validate(self.pre_parse_json(arguments_to_validate), strict=True)
        return model.model_dump_one_level()


class CheckedTool(Tool):
    """A tool whose argument errors are one line naming the argument (``argument_error``), which
    refuses argument names it does not take (a misspelt ``supersede`` would otherwise be dropped
    silently and the memory stored without what the caller asked for), and a lone surrogate by field
    (``unpaired.py``; over the wire ``jsonrpc.py`` answers it first)."""

    async def run(self, arguments: dict[str, Any], context: Any, convert_result: bool = False) -> Any:
        fields = self.fn_metadata.arg_model.model_fields
        accepted = {field.alias or name for name, field in fields.items()}
        unknown = sorted(name for name in arguments if name not in accepted)
        if unknown:  # the InvalidInput is the cause, so the call is counted as invalid_input (observe/calls.py)
            invalid = InvalidInput(
                unknown[0].encode("unicode_escape").decode()[:80], f"is not an argument of {self.name}; it takes {', '.join(sorted(accepted)) or 'no arguments'}")
            raise ToolError(f"Error executing tool {self.name}: {invalid}") from invalid
        if (unpaired := first_unpaired(arguments)) is not None:  # as jsonrpc.py refuses one sent over the wire
            invalid = InvalidInput(unpaired.where(), unpaired.problem())
            raise ToolError(f"Error executing tool {self.name}: {invalid}") from invalid
        try:
            return await super().run(arguments, context, convert_result)
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                invalid = argument_error(exc.__cause__.errors())
                raise ToolError(f"Error executing tool {self.name}: {invalid}") from invalid
            raise


def checked_tool(fn: Callable[..., Any], annotations: ToolAnnotations) -> Tool:
    """The MCP tool for ``fn``: strict arguments, one-line errors, a schema that refuses unknown names."""
    tool = CheckedTool.from_function(fn, annotations=annotations, structured_output=True)
    tool.fn_metadata = StrictArguments.of(tool.fn_metadata)  # strings as sent, one type rule (arguments.py)
    tool.parameters = {**inline_refs(tool.parameters), "description": TYPE_RULE, "additionalProperties": False}
    if tool.fn_metadata.output_schema is not None:
        tool.fn_metadata.output_schema = inline_refs(tool.fn_metadata.output_schema)
    return tool
