"""Secret detection on strings (mcp_memory/privacy): what is found, where, and what is never touched.

Every value here is fake: AWS's documented example key, or a provider's prefix followed by EXAMPLE-like
filler of the right shape. None is a real credential.
"""

from __future__ import annotations

import pytest
from detect_secrets.core.scan import scan_line
from detect_secrets.settings import default_settings

from mcp_memory.errors import InvalidInput
from mcp_memory.privacy.detect import find_secrets
from mcp_memory.privacy.redact import redact, screen, screen_metadata

FILLER = "EXAMPLEexample0123456789EXAMPLEexample0123456789EXAMPLEexample0123456789"


def _kinds(text: str) -> list[str]:
    return [secret.kind for secret in find_secrets(text)]


def _library_kinds(text: str) -> set[str]:
    """What detect-secrets itself names in ``text`` with every plugin on (its ad hoc string scan),
    leaving out its high-entropy plugins, which flag any long random-looking string by shape."""
    with default_settings():
        found = {secret.type for secret in scan_line(text)}
    return found - {"Base64 High Entropy String", "Hex High Entropy String"}


# Formats the library lacks (mcp_memory/privacy/patterns.py): each is found by us and named by no
# plugin of detect-secrets.
NEWER_FORMATS = [
    ("openai-api-key", "sk-proj-" + FILLER[:48]),
    ("openai-api-key", "sk-svcacct-" + FILLER[:48]),
    ("openai-api-key", "sk-" + FILLER[:48]),
    ("anthropic-api-key", "sk-ant-api03-" + FILLER[:60] + "-EXAMPLEAA"),
    ("github-token", "github_pat_11EXAMPLE0123456789abcd_" + FILLER[:59]),
    ("slack-token", "xapp-1-A0EXAMPLE12-1234567890123-" + "0123456789abcdef" * 4),
    ("stripe-key", "sk_test_" + "EXAMPLE0123456789abcdefgh"),
    ("stripe-key", "whsec_" + "EXAMPLE0123456789abcdefghEXAMPLE01"),
    ("google-api-key", "AIza" + "SyEXAMPLE-0123456789_abcdefghijklmn"),
    ("huggingface-token", "hf_" + "EXAMPLEexampleEXAMPLEexampleEXAMPL"),
    ("npm-token", "npm_" + "EXAMPLE0123456789abcdefghEXAMPLE0123"),
    ("digitalocean-token", "dop_v1_" + "0123456789abcdef" * 4),
    ("shopify-token", "shpat_" + "0123456789abcdef" * 2),
    ("groq-api-key", "gsk_" + FILLER[:52]),
    ("replicate-token", "r8_" + FILLER[:37]),
]


@pytest.mark.parametrize(("kind", "value"), NEWER_FORMATS, ids=[f"{k}-{v[:12]}" for k, v in NEWER_FORMATS])
def test_a_newer_format_the_library_lacks_is_found_at_its_place(kind, value):
    text = f"Here is the token I use for the deploy: {value} (rotate it next week)."
    assert _library_kinds(text) == set()
    start = text.index(value)
    assert [(s.kind, s.start, s.end) for s in find_secrets(text)] == [(kind, start, start + len(value))]


LIBRARY_FORMATS = [
    ("aws-access-key", "my AWS access key is AKIAIOSFODNN7EXAMPLE, region eu-west-1", "AKIAIOSFODNN7EXAMPLE"),
    ("github-token", "push with ghp_EXAMPLE0123456789abcdefghijklmnopqrs please", "ghp_EXAMPLE0123456789abcdefghijklmnopqrs"),
    ("gitlab-token", "CI uses glpat-EXAMPLE0123456789abcd now", "glpat-EXAMPLE0123456789abcd"),
    ("slack-token", "bot token xoxb-123456789012-1234567890123-EXAMPLEexample0123 works",
     "xoxb-123456789012-1234567890123-EXAMPLEexample0123"),
    ("stripe-key", "live key sk_live_EXAMPLE0123456789abcdefgh for billing", "sk_live_EXAMPLE0123456789abcdefgh"),
    # today's live keys are longer than the library's 24 characters: the rest of the key goes too
    ("stripe-key", "live key sk_live_51EXAMPLE0123456789abcdefghEXAMPLE0123456789abcdefgh0123 ok",
     "sk_live_51EXAMPLE0123456789abcdefghEXAMPLE0123456789abcdefgh0123"),
    ("url-password", "connect to postgres://app:Tr0ub4dor-EXAMPLE@db.internal:5432/prod", "Tr0ub4dor-EXAMPLE"),
    ("password", 'in settings.py I have DB_PASSWORD = "Hx7!EXAMPLE-pass9"', "Hx7!EXAMPLE-pass9"),
    # a value that holds the word is still a password; only lower-case words with separators are placeholders
    ("password", "the config says password: 'Password2024!'", "Password2024!"),
    ("sendgrid-key", "SG.EXAMPLE0123456789abcde.EXAMPLE0123456789abcdefghEXAMPLE0123456789a is the mail key",
     "SG.EXAMPLE0123456789abcde.EXAMPLE0123456789abcdefghEXAMPLE0123456789a"),
]


@pytest.mark.parametrize(("kind", "text", "value"), LIBRARY_FORMATS, ids=[k for k, _, _ in LIBRARY_FORMATS])
def test_the_library_plugins_find_their_formats_at_the_secret_itself(kind, text, value):
    start = text.index(value)
    assert [(s.kind, s.start, s.end) for s in find_secrets(text)] == [(kind, start, start + len(value))]


def test_a_private_key_is_redacted_with_its_whole_block():
    key = "-----BEGIN RSA PRIVATE KEY-----\nMIIEXAMPLEexample\nEXAMPLEexample0123==\n-----END RSA PRIVATE KEY-----"
    text, redactions = redact(f"The server key:\n{key}\nkeep it safe.")
    assert text == "The server key:\n[redacted: private-key]\nkeep it safe."
    assert [(r.kind, r.start, r.end) for r in redactions] == [("private-key", 16, 16 + len(key))]


def test_a_jwt_is_redacted_with_its_signature():
    token = ("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
             "EXAMPLEsignature0123456789abcdefghijklmnopq")
    assert redact(f"Bearer {token} expired")[0] == "Bearer [redacted: jwt] expired"


def test_redact_replaces_each_secret_and_reports_positions_in_the_text_as_given():
    text = "keys: AKIAIOSFODNN7EXAMPLE and ghp_EXAMPLE0123456789abcdefghijklmnopqrs, done"
    redacted, redactions = redact(text)
    assert redacted == "keys: [redacted: aws-access-key] and [redacted: github-token], done"
    assert [(r.field, r.kind, text[r.start:r.end]) for r in redactions] == [
        ("content", "aws-access-key", "AKIAIOSFODNN7EXAMPLE"),
        ("content", "github-token", "ghp_EXAMPLE0123456789abcdefghijklmnopqrs")]


def test_refuse_names_the_field_the_kind_and_the_character():
    with pytest.raises(InvalidInput) as refused:
        screen("content", "my AWS key: AKIAIOSFODNN7EXAMPLE", "refuse")
    assert str(refused.value).startswith('content: holds a secret (aws-access-key) at character 12; '
                                         'privacy.secrets = "refuse"')
    assert "AKIA" not in str(refused.value)


def test_keep_leaves_the_text_as_it_is():
    assert screen("content", "AKIAIOSFODNN7EXAMPLE", "keep") == ("AKIAIOSFODNN7EXAMPLE", [])


def test_metadata_strings_are_screened_at_any_depth_and_named_by_their_path():
    metadata = {"source": "chat", "auth": {"tokens": ["ok", "AKIAIOSFODNN7EXAMPLE"]}, "n": 3}
    screened, redactions = screen_metadata(metadata, "redact")
    assert screened == {"source": "chat", "auth": {"tokens": ["ok", "[redacted: aws-access-key]"]}, "n": 3}
    assert [(r.field, r.kind) for r in redactions] == [("metadata.auth.tokens.1", "aws-access-key")]


def test_a_metadata_key_holding_a_secret_is_redacted_too_and_two_such_keys_stay_apart():
    """Found by an attack: keys were left as they were, so {"AKIA...": "ci"} stored the key in clear
    (docs/privacy.md: every string of metadata). Two keys that redact alike keep both values."""
    metadata = {"AKIAIOSFODNN7EXAMPLE": "ci", "nested": {"AKIAI44QH8DHBEXAMPLE": 1, "AKIAIOSFODNN7EXAMPLE": 2}}
    screened, redactions = screen_metadata(metadata, "redact")
    assert screened == {"[redacted: aws-access-key]": "ci",
                        "nested": {"[redacted: aws-access-key]": 1, "[redacted: aws-access-key] #2": 2}}
    assert [(r.field, r.kind, r.start, r.end) for r in redactions] == [
        ("metadata.[redacted: aws-access-key] (key)", "aws-access-key", 0, 20),
        ("metadata.nested.[redacted: aws-access-key] (key)", "aws-access-key", 0, 20),
        ("metadata.nested.[redacted: aws-access-key] #2 (key)", "aws-access-key", 0, 20)]
    assert "AKIA" not in repr((screened, redactions))
    with pytest.raises(InvalidInput, match=r"^metadata\.\[redacted: aws-access-key\] \(key\): holds a secret"):
        screen_metadata({"AKIAIOSFODNN7EXAMPLE": "ci"}, "refuse")


PROSE = [
    "Order #A7F3-9921-XK shipped on 2024-03-02; invoice INV-2024-000381, tracking 1Z999AA10123456784.",
    "The request id was 3f2b8c1e-9d4a-4e6b-8f7a-1c2d3e4f5a6b and the trace 4bf92f3577b34da6a3ce929d0e0e4736.",
    "Fixed in commit 3f786850e387550fdab836ed7e6dc881de23001b (short: 3f78685), see PR #4821.",
    'The cache key is "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", a sha256.',
    "The key to the shed is under the mat; my password manager is 1Password and the token ring was lost.",
    'She said "the secret is patience" and the keynote was about API keys in general.',
    'api_key="my_api_key", password: "password", secret = "<your secret here>", token = "${TOKEN}"',
    "我的订单号是 2024031500123，会议在三楼的会议室，密码学课程很有意思。",
    "東京の会議は午後三時から。キーは受付にあります。",
    "Her MAC address is 00:1A:2B:3C:4D:5E and the server IP 203.0.113.42 on port 8443.",
    "Base64 of hello is aGVsbG8= and the ISBN is 978-3-16-148410-0; SKU ACME-WIDGET-00042.",
    "Download https://example.com/files/report-2024-Q1.pdf?version=3&lang=en from the wiki.",
]


@pytest.mark.parametrize("text", PROSE, ids=range(len(PROSE)))
def test_prose_with_ids_hashes_order_numbers_and_cjk_is_never_touched(text):
    assert find_secrets(text) == []
    assert redact(text) == (text, [])


def test_the_example_of_docs_privacy_md_redacts_as_shown():
    text = "the CI user's AWS key is AKIAIOSFODNN7EXAMPLE"
    redacted, redactions = redact(text)
    assert redacted == "the CI user's AWS key is [redacted: aws-access-key]"
    assert [r.model_dump() for r in redactions] == [{"field": "content", "kind": "aws-access-key", "start": 25, "end": 45}]
    with pytest.raises(InvalidInput, match=r'^content: holds a secret \(aws-access-key\) at character 25; '
                                           r'privacy.secrets = "refuse", so nothing was stored'):
        screen("content", text, "refuse")


def test_detection_never_opens_a_connection_though_the_library_can_verify_keys_online():
    """detect-secrets' plugins can call AWS, Slack, Stripe, ... to verify a key (``verify``, reached
    through ``analyze_line``); find_secrets never goes there. A child process with an audit hook that
    refuses every socket connect and name look-up scans every labelled case."""
    import subprocess
    import sys
    from pathlib import Path

    cases = Path(__file__).resolve().parents[1] / "evals" / "cases" / "secrets.json"
    script = (
        "import json, sys\n"
        "def refuse(event, args):\n"
        "    if event in ('socket.connect', 'socket.getaddrinfo', 'socket.gethostbyname'):\n"
        "        raise RuntimeError(f'network: {event} {args!r}')\n"
        "sys.addaudithook(refuse)\n"
        "from mcp_memory.privacy.detect import find_secrets\n"
        f"cases = json.load(open({str(cases)!r}))['cases']\n"
        "print(sum(bool(find_secrets(case['text'])) for case in cases))\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    assert int(result.stdout) == 136
