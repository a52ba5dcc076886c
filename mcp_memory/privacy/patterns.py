"""Formats of secrets that ``detect-secrets`` 1.5 lacks, each with a test in tests/test_privacy.py
showing the library misses it. Sources: each provider's documented key prefix."""

from __future__ import annotations

import re

__all__ = ["PATTERNS"]

_START = r"(?<![A-Za-z0-9_-])"  # not inside a longer word
_END = r"(?![A-Za-z0-9_-])"

# (kind, a literal every match holds, the pattern)
PATTERNS: tuple[tuple[str, str, re.Pattern[str]], ...] = tuple(
    (kind, hint, re.compile(_START + body + _END))
    for kind, hint, body in (
        # Anthropic: sk-ant-api03-..., sk-ant-admin01-...
        ("anthropic-api-key", "sk-ant-", r"sk-ant-[a-z]+\d\d-[A-Za-z0-9_-]{32,}"),
        # OpenAI keys without the legacy T3BlbkFJ marker the library needs: sk-proj-, sk-svcacct-, sk-admin-, sk-
        ("openai-api-key", "sk-", r"sk-(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{32,}"),
        # GitHub fine-grained personal access tokens
        ("github-token", "github_pat_", r"github_pat_[A-Za-z0-9_]{40,}"),
        # Slack app-level tokens (the library has xoxb-, xoxp-, ... and rotating xoxe.xoxp- ones)
        ("slack-token", "xapp-", r"xapp-\d-[A-Z0-9]+-\d+-[a-z0-9]{20,}"),
        # Stripe test-mode and restricted keys (the library knows live keys only)
        ("stripe-key", "k_test_", r"(?:sk|rk)_test_[0-9a-zA-Z]{24,}"),
        ("stripe-key", "whsec_", r"whsec_[0-9a-zA-Z]{32,}"),
        # Google API keys
        ("google-api-key", "AIza", r"AIza[0-9A-Za-z_-]{35}"),
        # Hugging Face access tokens
        ("huggingface-token", "hf_", r"hf_[A-Za-z]{34}"),
        # npm access tokens outside an .npmrc line
        ("npm-token", "npm_", r"npm_[A-Za-z0-9]{36}"),
        # DigitalOcean personal access tokens
        ("digitalocean-token", "_v1_", r"do[por]_v1_[a-f0-9]{64}"),
        # Shopify access tokens
        ("shopify-token", "shp", r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}"),
        # Groq and Replicate API keys
        ("groq-api-key", "gsk_", r"gsk_[A-Za-z0-9]{48,}"),
        ("replicate-token", "r8_", r"r8_[A-Za-z0-9]{37}"),
    )
)
