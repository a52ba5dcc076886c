"""find_secrets(text): where API keys, tokens, passwords and private keys sit in a text.

The detectors are Yelp's ``detect-secrets`` plugins (AWS, GitHub, GitLab, Slack, Stripe, JWTs,
private keys, basic-auth URLs, secret keywords, high-entropy strings, ...), called on each line
through their ``analyze_string``: never through ``analyze_line``, which may verify a key with its
provider over the network, and never through the library's global settings. The library reports
secret values per line; their character offsets are found here. Its false-positive filters
(``detect_secrets.filters.heuristic``) drop sequential strings, UUIDs, templates, ``$VARIABLES``
and id-like assignments.

The high-entropy plugins flag quoted ids and hashes in prose: the base64 one counts only on a line
that names a secret (``key``, ``token``, ``secret``, ``password``, ...) before the string, and the
hex one not at all (a quoted commit hash after "key" passes its limit).
``patterns.py`` adds the formats the library lacks (OpenAI ``sk-proj-``, Anthropic ``sk-ant-``,
GitHub ``github_pat_``, Google ``AIza``, ...).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from detect_secrets.filters import heuristic
from detect_secrets.plugins.artifactory import ArtifactoryDetector
from detect_secrets.plugins.aws import AWSKeyDetector
from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
from detect_secrets.plugins.base import BasePlugin, RegexBasedDetector
from detect_secrets.plugins.basic_auth import BasicAuthDetector
from detect_secrets.plugins.cloudant import CloudantDetector
from detect_secrets.plugins.discord import DiscordBotTokenDetector
from detect_secrets.plugins.github_token import GitHubTokenDetector
from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString, HighEntropyStringsPlugin
from detect_secrets.plugins.ibm_cloud_iam import IbmCloudIamDetector
from detect_secrets.plugins.ibm_cos_hmac import IbmCosHmacDetector
from detect_secrets.plugins.jwt import JwtTokenDetector
from detect_secrets.plugins.keyword import KeywordDetector
from detect_secrets.plugins.mailchimp import MailchimpDetector
from detect_secrets.plugins.npm import NpmDetector
from detect_secrets.plugins.openai import OpenAIDetector
from detect_secrets.plugins.private_key import PrivateKeyDetector
from detect_secrets.plugins.pypi_token import PypiTokenDetector
from detect_secrets.plugins.sendgrid import SendGridDetector
from detect_secrets.plugins.slack import SlackDetector
from detect_secrets.plugins.softlayer import SoftlayerDetector
from detect_secrets.plugins.square_oauth import SquareOAuthDetector
from detect_secrets.plugins.stripe import StripeDetector
from detect_secrets.plugins.telegram_token import TelegramBotTokenDetector
from detect_secrets.plugins.twilio import TwilioKeyDetector

from mcp_memory.privacy.patterns import PATTERNS

__all__ = ["Secret", "find_secrets"]


@dataclass(frozen=True)
class Secret:
    """A secret in a text: its ``kind`` (``aws-access-key``) and its span ``text[start:end]``
    (characters, end exclusive). Never its value."""

    kind: str
    start: int
    end: int


# The library's plugins and the kind each reports. Left out: IPPublicDetector (an address is not
# a secret).
_PLUGINS: tuple[tuple[BasePlugin, str], ...] = (
    (AWSKeyDetector(), "aws-access-key"),
    (ArtifactoryDetector(), "artifactory-token"),
    (AzureStorageKeyDetector(), "azure-storage-key"),
    (BasicAuthDetector(), "url-password"),
    (CloudantDetector(), "cloudant-password"),
    (DiscordBotTokenDetector(), "discord-bot-token"),
    (GitHubTokenDetector(), "github-token"),
    (GitLabTokenDetector(), "gitlab-token"),
    (IbmCloudIamDetector(), "ibm-cloud-iam-key"),
    (IbmCosHmacDetector(), "ibm-cos-hmac-key"),
    (JwtTokenDetector(), "jwt"),
    (KeywordDetector(), "password"),
    (MailchimpDetector(), "mailchimp-key"),
    (NpmDetector(), "npm-token"),
    (OpenAIDetector(), "openai-api-key"),
    (PrivateKeyDetector(), "private-key"),
    (PypiTokenDetector(), "pypi-token"),
    (SendGridDetector(), "sendgrid-key"),
    (SlackDetector(), "slack-token"),
    (SoftlayerDetector(), "softlayer-key"),
    (SquareOAuthDetector(), "square-oauth-secret"),
    (StripeDetector(), "stripe-key"),
    (TelegramBotTokenDetector(), "telegram-bot-token"),
    (TwilioKeyDetector(), "twilio-key"),
)
# The library's default limit (bits of Shannon entropy per character). Its hex plugin is left out:
# a quoted commit hash or sha256 passes its limit (3.0) after any word like "key"; a hex secret in an
# assignment (api_key = "...") is the keyword plugin's.
_ENTROPY: tuple[tuple[BasePlugin, str], ...] = ((Base64HighEntropyString(limit=4.5), "high-entropy-string"),)
# A literal each plugin's patterns need (checked in the lower-case text when written in lower case);
# a text holding none of its plugin's is not searched by it.
_ASSIGNED = ("key", "pw", "pass", "token")  # the keyword-assignment patterns (build_assignment_regex)
_SECRET_WORDS = ("key", "token", "secret", "passw", "pwd", "credential", "auth")
_HINTS: dict[str, tuple[str, ...]] = {
    "aws-access-key": ("A3T", "ABIA", "ACCA", "AKIA", "ASIA", "aws"),
    "artifactory-token": ("AKC", "AP"),
    "azure-storage-key": ("AccountKey=",),
    "url-password": ("://",),
    "cloudant-password": (*_ASSIGNED, "cloudant"),
    "github-token": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
    "gitlab-token": ("glpat-", "gldt-", "glft-", "glsoat-", "glrt-", "GR1348941", "glcbt-", "glimt-", "glptt-",
                     "glagent-", "gloas-"),
    "ibm-cloud-iam-key": _ASSIGNED,
    "ibm-cos-hmac-key": ("secret",),
    "jwt": ("eyJ",),
    "password": ("key", "pass", "pwd", "secret", "contrase"),
    "mailchimp-key": ("-us",),
    "npm-token": ("_authToken",),
    "openai-api-key": ("T3BlbkFJ",),
    "private-key": ("PRIVATE KEY", "PuTTY-User-Key-File-2"),
    "pypi-token": ("pypi-",),
    "sendgrid-key": ("SG.",),
    "slack-token": ("xox", "hooks.slack.com"),
    "softlayer-key": (*_ASSIGNED, "softlayer"),
    "square-oauth-secret": ("sq0csp-",),
    "stripe-key": ("k_live_",),
    "telegram-bot-token": (":",),
    "twilio-key": ("AC", "SK"),
    "high-entropy-string": _SECRET_WORDS,
}
_SECRET_WORD = re.compile(r"key|token|secret|passw|pwd|credential|auth", re.IGNORECASE)
_PEM_BLOCK = re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY[A-Z ]*-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY[A-Z ]*-----|\Z)"
                        r"|PuTTY-User-Key-File-2.*?(?:Private-MAC: *\S+|\Z)", re.DOTALL)
_LINE = re.compile(r"[^\n]+")
_QUOTE = re.compile(r"[\'\"`]")
_PLACEHOLDER = re.compile(r"[a-z_.-]+")
_TOKEN_TAIL = re.compile(r"[A-Za-z0-9_-]*")
_JWT_TAIL = re.compile(r"[A-Za-z0-9_.+/=-]*")


def _dropped(value: str, line: str, plugin: BasePlugin) -> bool:
    """The library's heuristic filters (its defaults for a scan), on one value of one line."""
    if not value or heuristic.is_sequential_string(value) or heuristic.is_potential_uuid(value):
        return True
    if heuristic.is_templated_secret(value) or heuristic.is_prefixed_with_dollar_sign(value):
        return True
    if heuristic.is_not_alphanumeric_string(value):
        return True
    if isinstance(plugin, RegexBasedDetector):
        return False
    return heuristic.is_likely_id_string(value, line, plugin) or heuristic.is_indirect_reference(line)


def _spans(value: str, line: str, offset: int) -> list[tuple[int, int]]:
    spans, at = [], line.find(value)
    while at >= 0:
        spans.append((offset + at, offset + at + len(value)))
        at = line.find(value, at + len(value))
    return spans


def _regex_spans(plugin: RegexBasedDetector, values: set[str], line: str, offset: int) -> list[tuple[int, int]]:
    """Spans of what a regex plugin reported: its first group when that holds the value (the
    password of ``://user:password@``), else the whole match (``(ghp|gho)_...`` reports only its
    prefix group as the value, which is not the secret) up to the end of the token it is in."""
    spans = []
    for regex in plugin.denylist:
        for match in regex.finditer(line):
            if not {match.group(), *(g for g in match.groups() if g)} & values:
                continue  # the plugin's own checks dropped it (a JWT that does not decode)
            start, end = match.span()
            if match.re.groups and match.group(1) and match.start(1) > start and len(match.group(1)) >= 4:
                start, end = match.span(1)
            else:  # a fixed-length pattern (sk_live_ and 24 characters) ends inside a longer key
                end = _TOKEN_TAIL.match(line, end).end()
            spans.append((offset + start, offset + end))
    return spans


def _gate(plugin: BasePlugin, kind: str) -> Callable[[str, str], bool]:
    """A quick test of a whole text (and its lower-case copy) that must pass for ``plugin`` to find
    anything in one of its lines: a literal its patterns need (``_HINTS``), then its own patterns
    (a line's match is also one of the text's). Most texts pass none, and are then read a few times
    per plugin instead of once per line and plugin."""
    hints = _HINTS.get(kind, ())
    raw = tuple(hint for hint in hints if hint != hint.lower())
    lower = tuple(hint for hint in hints if hint == hint.lower())

    def hinted(text: str, folded: str) -> bool:
        return not hints or any(h in text for h in raw) or any(h in folded for h in lower)

    if isinstance(plugin, RegexBasedDetector):
        patterns = list(plugin.denylist)
        return lambda text, folded: hinted(text, folded) and any(pattern.search(text) for pattern in patterns)
    return lambda text, folded: hinted(text, folded) and _QUOTE.search(text) is not None


def _placeholder(value: str) -> bool:
    """A keyword's value that names a secret instead of being one: ``api_key="my_api_key"``,
    ``password: 'password'`` (lower-case letters and separators only)."""
    return _PLACEHOLDER.fullmatch(value) is not None


def _plugin_secrets(plugin: BasePlugin, kind: str, line: str, offset: int) -> list[Secret]:
    values = {value for value in plugin.analyze_string(line) if not _dropped(value, line, plugin)}
    if isinstance(plugin, KeywordDetector):
        values = {value for value in values if not _placeholder(value)}
    if isinstance(plugin, HighEntropyStringsPlugin):
        values = {value for value in values if plugin.calculate_shannon_entropy(value) > plugin.entropy_limit}
    if not values:
        return []
    if isinstance(plugin, RegexBasedDetector):
        return [Secret(kind, start, end) for start, end in _regex_spans(plugin, values, line, offset)]
    spans = [span for value in values for span in _spans(value, line, offset)]
    if isinstance(plugin, HighEntropyStringsPlugin):  # only after a word that names a secret
        spans = [(start, end) for start, end in spans if _SECRET_WORD.search(line, 0, start - offset)]
    return [Secret(kind, start, end) for start, end in spans]


def find_secrets(text: str) -> list[Secret]:
    """Every secret found in ``text``, in order, none overlapping (of overlapping finds the
    earliest, then the longest, wins). A private key covers its whole PEM block; a JWT its
    signature too.

    Cost: about 30 regular-expression searches of the text when it holds no secret
    (evals/secrets.py measures it).
    """
    found: list[Secret] = []
    lines: list[tuple[str, int]] | None = None
    folded = text.lower()
    for plugin, kind, gate in _GATED:
        if not gate(text, folded):
            continue
        if lines is None:
            lines = [(line.group(), line.start()) for line in _LINE.finditer(text)]
        for line, offset in lines:
            if gate(line, line.lower()):
                found += _plugin_secrets(plugin, kind, line, offset)
    for kind, hint, pattern in PATTERNS:
        if hint in text:
            found += [Secret(kind, m.start(), m.end()) for m in pattern.finditer(text)]
    for index, secret in enumerate(found):
        if secret.kind == "private-key" and (block := _PEM_BLOCK.search(text, _line_start(text, secret.start))):
            found[index] = Secret(secret.kind, min(block.start(), secret.start), max(block.end(), secret.end))
        elif secret.kind == "jwt":  # the library's pattern stops before the signature
            found[index] = Secret(secret.kind, secret.start, _JWT_TAIL.match(text, secret.end).end())
    kept: list[Secret] = []
    for secret in sorted(found, key=lambda s: (s.start, -s.end)):
        if not kept or secret.start >= kept[-1].end:
            kept.append(secret)
    return kept


def _line_start(text: str, at: int) -> int:
    return text.rfind("\n", 0, at) + 1


_GATED = tuple((plugin, kind, _gate(plugin, kind)) for plugin, kind in (*_PLUGINS, *_ENTROPY))
