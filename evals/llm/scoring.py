"""Answer and citation scores without an LLM judge, as the LoCoMo paper scores answers.

Answers are normalised (lower case, punctuation and the articles a/an/the removed, whitespace
collapsed) and compared by exact match and token F1. Unlike LoCoMo's script, tokens are not
stemmed (so "paints" and "painting" differ); the figures are comparable within our runs.
Citations are scored against the question's evidence turns: precision over the cited memories'
turns, recall over the evidence.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Iterable

__all__ = ["citation_scores", "exact_match", "normalise", "token_f1"]

_ARTICLES = re.compile(r"\b(a|an|the|and)\b")
_PUNCTUATION = str.maketrans("", "", string.punctuation)


def normalise(text: str) -> str:
    """Lower case, without punctuation and articles, single spaces."""
    return " ".join(_ARTICLES.sub(" ", text.lower().translate(_PUNCTUATION)).split())


def exact_match(prediction: str, gold: str) -> bool:
    """Whether the normalised texts are equal."""
    return normalise(prediction) == normalise(gold)


def token_f1(prediction: str, gold: str) -> float:
    """F1 of the normalised tokens (0.0 when either side has none)."""
    predicted, expected = normalise(prediction).split(), normalise(gold).split()
    common = sum((Counter(predicted) & Counter(expected)).values())
    if not predicted or not expected or common == 0:
        return 0.0
    precision, recall = common / len(predicted), common / len(expected)
    return 2 * precision * recall / (precision + recall)


def citation_scores(cited_turns: Iterable[str], evidence: Iterable[str]) -> tuple[float | None, float | None]:
    """(precision, recall) of the cited turns against the evidence; None where undefined (nothing
    cited, or no evidence)."""
    cited, gold = set(cited_turns), set(evidence)
    precision = len(cited & gold) / len(cited) if cited else None
    recall = len(cited & gold) / len(gold) if gold else None
    return precision, recall
