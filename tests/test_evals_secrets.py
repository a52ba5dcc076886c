"""evals/secrets.py and its case file: the figures docs/privacy.md and evals/README.md state."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:  # evals/ is not an installed package
    sys.path.insert(0, str(REPO_ROOT))

from evals.generate_secrets import build  # noqa: E402
from evals.secrets import corpora, recall, scan  # noqa: E402

CASES = REPO_ROOT / "evals" / "cases"
# LoCoMo and the LongMemEval sample are not shipped: beside $MCP_MEMORY_LOCOMO_PATH, else ../shared/data.
DATA = (Path(os.environ["MCP_MEMORY_LOCOMO_PATH"]).parent if os.environ.get("MCP_MEMORY_LOCOMO_PATH")
        else REPO_ROOT.parent / "shared" / "data")


def test_the_case_file_is_what_the_generator_builds():
    assert json.loads((CASES / "secrets.json").read_text(encoding="utf-8")) == build(7)


def test_recall_is_136_of_140_secrets_of_35_kinds_and_only_passwords_said_in_words_are_missed():
    cases = json.loads((CASES / "secrets.json").read_text(encoding="utf-8"))["cases"]
    found = recall(cases)
    assert (found["found"], found["total"], found["kinds"]) == (136, 140, 35)
    assert found["missed"] == [f"password-in-prose-{n}" for n in range(4)]


def test_no_redaction_on_locomo_the_mixed_suite_or_the_longmemeval_sample():
    locomo, sample = DATA / "locomo10.json", DATA / "longmemeval_s_cleaned.sample50.json"
    if not (locomo.is_file() and sample.is_file()):
        pytest.skip(f"LoCoMo or the LongMemEval sample is absent from {DATA} (not shipped with the repository)")
    texts = corpora(locomo, CASES / "mixed.json", sample)
    assert {name: len(found) for name, found in texts.items()} == {
        "LoCoMo turns": 5_882, "mixed suite (memories and questions)": 1_154,
        "LongMemEval sample (haystack turns)": 25_039}
    assert {name: scan(name, found)["findings"] for name, found in texts.items()} == dict.fromkeys(texts, [])
