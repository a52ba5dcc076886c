"""Build evals/cases/secrets.json: fake secrets of many kinds inside realistic sentences, labelled.

``python -m evals.generate_secrets [--out evals/cases/secrets.json] [--seed 7]``. Every value is
generated (seeded, so the file is reproducible) in its provider's documented shape, with EXAMPLE in
it wherever the shape allows; none is a real credential. Each case: ``text``, the ``kind`` of its
secret, and ``start``/``end``, the secret's span (the part that must go; a redaction may take more,
such as the ``AccountKey=`` before an Azure key). evals/secrets.py measures recall on it.
"""

from __future__ import annotations

import argparse
import base64
import json
import random
import string
from collections.abc import Callable
from pathlib import Path

UPPER_DIGITS = string.ascii_uppercase + string.digits
ALNUM = string.ascii_letters + string.digits
LOWER_HEX = "0123456789abcdef"
B64 = ALNUM + "+/"


def _pick(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _filled(rng: random.Random, alphabet: str, n: int, marker: str = "EXAMPLE") -> str:
    """``n`` characters of ``alphabet`` with ``marker`` in the middle (when it fits the alphabet)."""
    if n <= len(marker) + 4 or any(ch not in alphabet for ch in marker):
        return _pick(rng, alphabet, n)
    head = (n - len(marker)) // 2
    return _pick(rng, alphabet, head) + marker + _pick(rng, alphabet, n - head - len(marker))


def _b64url(data: dict[str, object]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data, separators=(",", ":")).encode()).decode().rstrip("=")


def _pem(rng: random.Random, label: str) -> str:
    body = "\n".join(_filled(rng, B64, 64) for _ in range(4))
    return f"-----BEGIN {label}-----\n{body}\n-----END {label}-----"


# kind -> (how the snippet is made: (rng) -> (snippet, secret inside it), phrases that carry it)
Maker = Callable[[random.Random], tuple[str, str]]


def _plain(make: Callable[[random.Random], str]) -> Maker:
    def snippet(rng: random.Random) -> tuple[str, str]:
        value = make(rng)
        return value, value
    return snippet


def _around(template: str, make: Callable[[random.Random], str]) -> Maker:
    def snippet(rng: random.Random) -> tuple[str, str]:
        value = make(rng)
        return template.format(value), value
    return snippet


KINDS: dict[str, Maker] = {
    "aws-access-key": _plain(lambda r: "AKIA" + _pick(r, UPPER_DIGITS, 9) + "EXAMPLE"),
    "aws-secret-key": _around("aws_secret_access_key = '{}'", lambda r: _filled(r, ALNUM + "/+", 40)),
    "github-token": _plain(lambda r: "ghp_" + _filled(r, ALNUM, 36)),
    "github-oauth-token": _plain(lambda r: "gho_" + _filled(r, ALNUM, 36)),
    "github-fine-grained-token": _plain(lambda r: "github_pat_11" + _filled(r, UPPER_DIGITS, 20) + "_"
                                        + _filled(r, ALNUM, 59)),
    "gitlab-token": _plain(lambda r: "glpat-" + _filled(r, ALNUM, 20)),
    "slack-bot-token": _plain(lambda r: f"xoxb-{_pick(r, string.digits, 12)}-{_pick(r, string.digits, 13)}-"
                              + _filled(r, string.ascii_lowercase + string.digits, 24, "example")),
    "slack-user-token": _plain(lambda r: f"xoxp-{_pick(r, string.digits, 12)}-{_pick(r, string.digits, 12)}-"
                               f"{_pick(r, string.digits, 13)}-" + _pick(r, LOWER_HEX, 32)),
    "slack-webhook": _plain(lambda r: f"https://hooks.slack.com/services/T{_pick(r, UPPER_DIGITS, 8)}/"
                            f"B{_pick(r, UPPER_DIGITS, 8)}/" + _filled(r, ALNUM, 24)),
    "stripe-live-key": _plain(lambda r: "sk_live_" + _filled(r, ALNUM, 24)),
    "stripe-test-key": _plain(lambda r: "sk_test_" + _filled(r, ALNUM, 24)),
    "openai-project-key": _plain(lambda r: "sk-proj-" + _filled(r, ALNUM + "_-", 74) + "T3BlbkFJ"
                                 + _filled(r, ALNUM + "_-", 74)),
    "openai-legacy-key": _plain(lambda r: "sk-" + _filled(r, ALNUM, 20) + "T3BlbkFJ" + _pick(r, ALNUM, 20)),
    "anthropic-api-key": _plain(lambda r: "sk-ant-api03-" + _filled(r, ALNUM + "_-", 93) + "AA"),
    "google-api-key": _plain(lambda r: "AIza" + _filled(r, ALNUM + "_-", 35)),
    "jwt": _plain(lambda r: _b64url({"alg": "HS256", "typ": "JWT"}) + "." + _b64url(
        {"sub": _pick(r, string.digits, 10), "name": "Example User", "iat": 1516239022}) + "."
        + _filled(r, ALNUM + "_-", 43)),
    "rsa-private-key": _plain(lambda r: _pem(r, "RSA PRIVATE KEY")),
    "openssh-private-key": _plain(lambda r: _pem(r, "OPENSSH PRIVATE KEY")),
    "url-password": _around("postgres://app_user:{}@db.internal.example:5432/orders",
                            lambda r: _filled(r, ALNUM + "-_", 18, "Ex4mple")),
    "password-assignment": _around('DB_PASSWORD="{}"', lambda r: _filled(r, ALNUM + "!#%", 16, "Ex4mple")),
    "sendgrid-key": _plain(lambda r: "SG." + _filled(r, ALNUM + "_-", 22) + "." + _filled(r, ALNUM + "_-", 43)),
    "twilio-api-key": _plain(lambda r: "SK" + _pick(r, LOWER_HEX, 32)),
    "mailchimp-key": _plain(lambda r: _pick(r, LOWER_HEX, 32) + "-us" + str(r.randint(1, 20))),
    "telegram-bot-token": _plain(lambda r: _pick(r, string.digits, 10) + ":AA" + _filled(r, ALNUM + "_-", 33)),
    "discord-bot-token": _plain(lambda r: "M" + _filled(r, ALNUM, 23) + "." + _pick(r, ALNUM, 6) + "."
                                + _filled(r, ALNUM + "_-", 27)),
    "npm-token": _plain(lambda r: "npm_" + _filled(r, ALNUM, 36)),
    "pypi-token": _plain(lambda r: "pypi-AgEIcHlwaS5vcmc" + _filled(r, ALNUM + "_-", 80)),
    "huggingface-token": _plain(lambda r: "hf_" + _filled(r, string.ascii_letters, 34)),
    "square-oauth-secret": _plain(lambda r: "sq0csp-" + _filled(r, ALNUM + "_-", 43)),
    "azure-storage-key": _around("DefaultEndpointsProtocol=https;AccountName=examplestore;AccountKey={}",
                                 lambda r: _filled(r, ALNUM + "+/", 86) + "=="),
    "digitalocean-token": _plain(lambda r: "dop_v1_" + _pick(r, LOWER_HEX, 64)),
    "shopify-token": _plain(lambda r: "shpat_" + _pick(r, LOWER_HEX, 32)),
    "groq-api-key": _plain(lambda r: "gsk_" + _filled(r, ALNUM, 52)),
    "high-entropy-secret": _around('client secret: "{}"', lambda r: _pick(r, B64, 44)),
    # No format and no assignment: a password said in words. Expected to be missed (docs/privacy.md).
    "password-in-prose": _around("the wifi password is {}", lambda r: _filled(r, ALNUM, 12, "Ex4mple")),
}

SENTENCES = [
    "Here is the key for the staging deploy: {s} - please rotate it after the release.",
    "I pasted this into the CI settings yesterday: {s}. Does the pipeline pick it up?",
    "Note to self, the credentials for the billing service are {s} (ask Maria before sharing).",
    "Can you check why the request fails? I'm using {s} in the config and it still says unauthorized.",
]


def build(seed: int) -> dict[str, object]:
    rng = random.Random(seed)
    cases = []
    for kind, make in KINDS.items():
        for number, sentence in enumerate(SENTENCES):
            snippet, secret = make(rng)
            head, tail = sentence.split("{s}")
            text = head + snippet + tail
            start = len(head) + snippet.index(secret)
            cases.append({"id": f"{kind}-{number}", "kind": kind, "text": text, "start": start,
                          "end": start + len(secret)})
    return {"name": "secrets", "seed": seed, "generator": "evals/generate_secrets.py",
            "counts": {"cases": len(cases), "kinds": len(KINDS)}, "cases": cases}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("evals/cases/secrets.json"))
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    built = build(args.seed)
    args.out.write_text(json.dumps(built, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {built['counts']} to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
