"""The ``[privacy]`` settings group."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from mcp_memory.setting_values import SettingsGroup

__all__ = ["PrivacySettings", "SecretsPolicy"]

SecretsPolicy = Literal["redact", "refuse", "keep"]


class PrivacySettings(SettingsGroup):
    """What happens to secrets (API keys, tokens, passwords, private keys) in what is stored."""

    secrets: SecretsPolicy = Field(
        "redact",
        description=(
            "redact: each secret found in a memory's content or metadata (store_memory and every import) is"
            " replaced by [redacted: <kind>] before anything is stored, embedded or sent to a model; refuse: the"
            " store fails naming the kind and position, nothing is stored; keep: stored verbatim (docs/privacy.md)."
        ),
    )
