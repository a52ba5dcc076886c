"""The ``Retriever`` protocol the LoCoMo runner drives, and the baselines.

A retriever is prepared once per conversation (index, ingest) and then ranks that conversation's
documents for each question. Results are groups of dia_ids (see ``metrics.RankedGroups``). Any plain
function ``(documents, question, k) -> ranked dia_id groups`` becomes a retriever through
``FunctionRetriever``; BM25 keeps an index per conversation and so is a class.

Failure policy: the baselines raise on bad input (``ValueError``); they never return partial ranks.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Protocol

import bm25s
import numpy as np

from evals.locomo_data import Conversation, Document

RankFunction = Callable[[Sequence[Document], str, int], list[tuple[str, ...]]]
"""(conversation documents, question, k) -> up to k results, best first, each a group of dia_ids."""


class Retriever(Protocol):
    """What the runner needs from a retriever under evaluation."""

    name: str

    async def prepare(self, conversation: Conversation) -> None:
        """Index or ingest one conversation; called once before its questions."""
        ...

    async def rank(
        self, conversation: Conversation, question: str, k: int, as_of: datetime | None = None
    ) -> list[tuple[str, ...]]:
        """Return up to k results for the question, best first, each a group of dia_ids; ``as_of`` is when
        it is asked (retrievers without a notion of time ignore it)."""
        ...

    def describe(self) -> dict[str, object]:
        """Settings to record in the report (JSON-serialisable, no secrets)."""
        ...


class FunctionRetriever:
    """Adapt a stateless ``RankFunction`` to the ``Retriever`` protocol."""

    def __init__(self, name: str, rank_function: RankFunction) -> None:
        """Wrap ``rank_function`` under the display ``name``."""
        self.name = name
        self._rank_function = rank_function

    async def prepare(self, conversation: Conversation) -> None:
        """Nothing to prepare: the function sees the documents on every call."""

    async def rank(
        self, conversation: Conversation, question: str, k: int, as_of: datetime | None = None
    ) -> list[tuple[str, ...]]:
        """Call the function over the conversation's documents."""
        return self._rank_function(conversation.documents, question, k)[:k]

    def describe(self) -> dict[str, object]:
        """Name the wrapped function."""
        return {"function": getattr(self._rank_function, "__qualname__", repr(self._rank_function))}


def _english_stemmer() -> tuple[Callable[[list[str]], list[str]] | None, str]:
    """Pick a Snowball English stemmer: PyStemmer if installed, else py_rust_stemmers, else none.

    Returns:
        The stemmer (a callable over a list of words, as bm25s accepts) and its name for the report.
    """
    try:
        import Stemmer  # PyStemmer, bm25s' recommended stemmer

        py_stemmer = Stemmer.Stemmer("english")
        return py_stemmer.stemWords, "PyStemmer snowball english"
    except ImportError:
        pass
    try:
        from py_rust_stemmers import SnowballStemmer

        rust_stemmer = SnowballStemmer("english")
        return rust_stemmer.stem_words, "py_rust_stemmers snowball english"
    except ImportError:
        return None, "none"


class Bm25Retriever:
    """BM25 over each conversation's documents with bm25s (Lù, 2024), one index per conversation.

    Tokenisation is bm25s' own: lower-cased ``\\b\\w\\w+\\b`` tokens, stopwords removed (``"en"``:
    the 33-word Lucene list; ``"en_plus"``: bm25s' longer list), Snowball English stemming when a
    stemmer is installed. Scoring: bm25s defaults (Lucene variant, k1 = 1.5, b = 0.75).
    """

    def __init__(self, stopwords: str = "en_plus", stem: bool = True) -> None:
        """Configure tokenisation.

        Args:
            stopwords: a bm25s stopword list name: ``"en_plus"`` (default; scores higher on LoCoMo) or ``"en"``.
            stem: stem tokens when a Snowball stemmer is available.
        """
        self.name = "bm25"
        self._stopwords = stopwords
        self._stemmer, self._stemmer_name = _english_stemmer() if stem else (None, "none")
        self._indexes: dict[str, tuple[bm25s.BM25, tuple[Document, ...]]] = {}

    def _tokenize(self, texts: list[str]) -> list[list[str]]:
        """Tokenise texts to lists of (stemmed) tokens, stopwords removed."""
        tokens = bm25s.tokenize(
            texts, stopwords=self._stopwords, stemmer=self._stemmer, return_ids=False, show_progress=False
        )
        return [list(row) for row in tokens]

    async def prepare(self, conversation: Conversation) -> None:
        """Build the conversation's index over its distinct turn contents."""
        documents = conversation.documents
        index = bm25s.BM25()
        index.index(self._tokenize([document.content for document in documents]), show_progress=False)
        self._indexes[conversation.sample_id] = (index, documents)

    async def rank(
        self, conversation: Conversation, question: str, k: int, as_of: datetime | None = None
    ) -> list[tuple[str, ...]]:
        """Rank the conversation's documents for the raw question.

        Documents scoring 0 (no query term) are still returned to fill k, in bm25s' order, as a
        dense retriever would; they rarely matter for recall@k at k <= 50.

        Raises:
            ValueError: ``prepare`` was not called for this conversation.
        """
        if conversation.sample_id not in self._indexes:
            raise ValueError(f"BM25 index for {conversation.sample_id} missing; call prepare() first")
        index, documents = self._indexes[conversation.sample_id]
        top_k = min(k, len(documents))
        positions, _scores = index.retrieve([self._tokenize([question])[0]], k=top_k, show_progress=False)
        return [documents[int(position)].dia_ids for position in np.asarray(positions)[0]]

    def describe(self) -> dict[str, object]:
        """Tokenisation and scoring settings."""
        return {
            "library": f"bm25s {bm25s.__version__}",
            "method": "lucene",
            "k1": 1.5,
            "b": 0.75,
            "stopwords": self._stopwords,
            "stemmer": self._stemmer_name,
            "query": "raw question",
        }
