"""The ``[privacy]`` settings group."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["PrivacySettings", "SecretsPolicy"]

SecretsPolicy = Literal["redact", "refuse", "keep"]


class PrivacySettings(BaseModel):
    """What happens to secrets (API keys, tokens, passwords, private keys) in what is stored."""

    model_config = ConfigDict(extra="forbid")  # a misspelt key is an error, not a silent default

    secrets: SecretsPolicy = Field(
        "redact",
        description=(
            "redact: each secret found in a memory's content or metadata (store_memory and every import) is"
            " replaced by [redacted: <kind>] before anything is stored, embedded or sent to a model; refuse: the"
            " store fails naming the kind and position, nothing is stored; keep: stored verbatim (docs/privacy.md)."
        ),
    )
