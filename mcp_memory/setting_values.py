"""How a setting's value is read: one rule for every boolean, integer and number setting.

pydantic's lax mode read ``MCP_MEMORY_SUPERSEDE__LLM_ON_STORE=yes`` (and ``off``, ``1``, ``t``) as a
boolean and ``candidates = 2.0`` as 2. Every settings group (``SettingsGroup``) and ``Settings``
itself read their fields with ``read_setting`` first:

- a boolean is true or false: a TOML boolean, or the text ``true`` or ``false`` in any case (an
  environment variable is always text);
- an integer is a whole number written without a fraction: a TOML integer, or text of decimal
  digits with an optional sign; never a boolean, never ``2.0``;
- a number is a TOML integer or float, or text holding a JSON number (``0.5``, ``1e3``); never a
  boolean, ``nan`` or ``inf``.

Anything else is refused with a message that names no more than the expectation; the command line
prints it after the setting's name (``supersede.candidates: must be a whole number, written without
a fraction (got 2.0)``). Other fields are left to pydantic. Not pydantic's strict mode: it would
refuse every environment variable, which is always text, and every path written in TOML.
"""

from __future__ import annotations

import re
import types
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

__all__ = ["SettingsGroup", "read_setting"]

_INTEGER = re.compile(r"[+-]?[0-9]{1,30}")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]{0,30})(?:\.[0-9]{1,30})?(?:[eE][+-]?[0-9]{1,3})?")


def _kind(annotation: Any) -> type | None:
    """bool, int or float when the field holds one of them (or None), else None."""
    members = get_args(annotation) if get_origin(annotation) in (Union, types.UnionType) else (annotation,)
    members = tuple(member for member in members if member is not type(None))
    return members[0] if len(members) == 1 and members[0] in (bool, int, float) else None


def _bool(value: Any) -> Any:
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    if isinstance(value, bool):
        return value
    raise PydanticCustomError("setting_bool", "must be true or false")


def _int(value: Any) -> Any:
    if isinstance(value, str) and _INTEGER.fullmatch(value.strip()):
        return int(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise PydanticCustomError("setting_int", "must be a whole number, written without a fraction")


def _float(value: Any) -> Any:
    if isinstance(value, str) and _NUMBER.fullmatch(value.strip()):
        return float(value)
    if isinstance(value, int | float) and not isinstance(value, bool) and value == value and abs(value) != float("inf"):
        return value
    raise PydanticCustomError("setting_number", "must be a number")


_READERS = {bool: _bool, int: _int, float: _float}


def read_setting(cls: type[BaseModel], value: Any, info: ValidationInfo) -> Any:
    """``value`` of the field ``info.field_name`` of ``cls`` as the rule above reads it (a before-validator).

    None passes (an optional setting left unset); fields that are not a boolean, integer or number pass as given.

    Raises:
        PydanticCustomError: a value the rule refuses; pydantic adds the field's name.
    """
    field = cls.model_fields.get(info.field_name or "")
    reader = _READERS.get(_kind(field.annotation)) if field is not None else None  # type: ignore[arg-type]
    if reader is None or value is None:
        return value
    return reader(value)


class SettingsGroup(BaseModel):
    """A group of settings (``[limits]``, ``[recall]``, ...): misspelt keys refused, values read by ``read_setting``."""

    model_config = ConfigDict(extra="forbid")  # a misspelt key is an error, not a silent default

    _read = field_validator("*", mode="before")(classmethod(read_setting))  # type: ignore[arg-type]
