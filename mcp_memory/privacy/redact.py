"""redact(text) and screen(...): secrets out of a memory before it is stored, embedded or sent to
a model, as ``privacy.secrets`` says (redact, refuse or keep)."""

from __future__ import annotations

from typing import Any

from mcp_memory.errors import InvalidInput
from mcp_memory.models import Redaction
from mcp_memory.privacy.detect import find_secrets
from mcp_memory.privacy.settings import SecretsPolicy

__all__ = ["marker", "redact", "screen", "screen_metadata"]


def marker(kind: str) -> str:
    """What a secret of ``kind`` is replaced by: ``[redacted: aws-access-key]``."""
    return f"[redacted: {kind}]"


def redact(text: str, field: str = "content") -> tuple[str, list[Redaction]]:
    """``text`` with each secret replaced by its marker, and where each was.

    Returns:
        The redacted text, and one Redaction per secret (its kind and its span in ``text`` as
        given, in characters), in order. Never the secret's value.
    """
    secrets = find_secrets(text)
    if not secrets:
        return text, []
    parts, at = [], 0
    for secret in secrets:
        parts += [text[at:secret.start], marker(secret.kind)]
        at = secret.end
    parts.append(text[at:])
    return "".join(parts), [Redaction(field=field, kind=s.kind, start=s.start, end=s.end) for s in secrets]


def screen(field: str, text: str, policy: SecretsPolicy) -> tuple[str, list[Redaction]]:
    """``text`` as ``policy`` stores it: redacted, refused, or kept as it is.

    Raises:
        InvalidInput: ``policy`` is refuse and ``text`` holds a secret; names the first one's kind
            and position (``content: holds a secret (aws-access-key) at character 17; ...``).
    """
    if policy == "keep":
        return text, []
    redacted, redactions = redact(text, field)
    if redactions and policy == "refuse":
        first = redactions[0]
        more = f" and {len(redactions) - 1} more" if len(redactions) > 1 else ""
        raise InvalidInput(field, f"holds a secret ({first.kind}) at character {first.start}{more}; "
                           'privacy.secrets = "refuse", so nothing was stored. Remove the secret and store again')
    return redacted, redactions


def screen_metadata(metadata: dict[str, Any], policy: SecretsPolicy) -> tuple[dict[str, Any], list[Redaction]]:
    """``metadata`` with every string value and every key (at any depth) screened as ``screen`` does;
    fields are named by their path (``metadata.auth.token``, ``metadata.keys.0``), a key by its path
    once redacted and `` (key)`` (``metadata.[redacted: aws-access-key] (key)``). Two keys of one
    object that redact alike stay apart: the second gets `` #2``, and so on."""
    if policy == "keep":
        return metadata, []
    found: list[Redaction] = []

    def screened_key(key: str, path: str, taken: dict[str, Any]) -> str:
        redacted, redactions = redact(key, "")
        if not redactions:
            return key
        unique, n = redacted, 1
        while unique in taken:
            n += 1
            unique = f"{redacted} #{n}"
        field = f"{path}.{unique} (key)"
        if policy == "refuse":
            screen(field, key, policy)  # raises, naming the key by its redacted path
        found.extend(r.model_copy(update={"field": field}) for r in redactions)
        return unique

    def walk(value: Any, path: str) -> Any:
        if isinstance(value, str):
            screened, redactions = screen(path, value, policy)
            found.extend(redactions)
            return screened
        if isinstance(value, dict):
            plain = {key for key in value if not find_secrets(key)}
            out: dict[str, Any] = {}
            for key, item in value.items():
                name = key if key in plain else screened_key(key, path, {**dict.fromkeys(plain), **out})
                out[name] = walk(item, f"{path}.{name}")
            return out
        if isinstance(value, list):
            return [walk(item, f"{path}.{index}") for index, item in enumerate(value)]
        return value

    screened = walk(metadata, "metadata")
    return (screened, found) if found else (metadata, [])
