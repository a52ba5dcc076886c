"""Settings: environment (``MCP_MEMORY_`` prefix) over ``config.toml`` over defaults.

One pydantic-settings class with nested groups. Top-level keys read as
``MCP_MEMORY_<KEY>`` (``MCP_MEMORY_DATABASE_URL``, ``MCP_MEMORY_DATA_DIR``); nested keys as
``MCP_MEMORY_<GROUP>__<KEY>`` (``MCP_MEMORY_EMBEDDING__PROVIDER``). The TOML file is
named by ``--config`` or ``MCP_MEMORY_CONFIG``; ``config.toml.example`` documents every key.
Units are in the names: ``_s`` seconds, ``_ms`` milliseconds, ``_chars`` characters,
``_bytes`` bytes, ``_days`` days.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Literal, get_args

import platformdirs
from pydantic import BaseModel, BeforeValidator, Field, field_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from mcp_memory.access.settings import (
    AuthSettings,
    HttpSettings,
    MetricsSettings,
    OAuthSettings,
    StdioSettings,
    TokenSettings,
)
from mcp_memory.embedding.settings import DEFAULT_MODEL, EmbeddingSettings
from mcp_memory.llm.settings import LlmSettings
from mcp_memory.privacy.settings import PrivacySettings
from mcp_memory.setting_values import SettingsGroup, read_setting

__all__ = [
    "DEFAULT_MODEL",
    "AuthSettings",
    "EmbeddingSettings",
    "HttpSettings",
    "LimitSettings",
    "LlmSettings",
    "MetricsSettings",
    "OAuthSettings",
    "PrivacySettings",
    "RecallSettings",
    "Settings",
    "StdioSettings",
    "SupersedeSettings",
    "TokenSettings",
]

class LimitSettings(SettingsGroup):
    """Input and output limits enforced on every tool call."""

    max_content_chars: int = Field(32_000, ge=1, description="Longest memory content, in characters.")
    max_query_chars: int = Field(4_000, ge=1, description="Longest recall query, in characters.")
    max_session_chars: int = Field(256, ge=1, description="Longest session name, in characters.")
    max_metadata_bytes: int = Field(16_384, ge=2, description="Largest metadata object, as UTF-8 JSON bytes.")
    max_top_k: int = Field(100, ge=1, description="Largest top_k a recall may ask for.")
    default_top_k: int = Field(12, ge=1, description="top_k when the caller gives none.")
    max_supersedes: int = Field(32, ge=1, description="Most memory_ids one store_memory may name in supersedes.")
    max_response_chars: int = Field(
        80_000, ge=1_000, description="Largest serialized recall or audit result; lower-ranked items are dropped whole."
    )


class RecallSettings(SettingsGroup):
    """Knobs of the recall pipeline; defaults are the ones the LoCoMo evaluation supports."""

    vector_candidates: int = Field(100, ge=1, description="Candidates from vector search per query.")
    keyword_candidates: int = Field(100, ge=1, description="Candidates from keyword search per query.")
    max_keyword_terms: int = Field(32, ge=1, description="BM25 reads at most this many of a query's words, rarest first.")
    max_identifier_terms: int = Field(
        4, ge=1, description="The identifier list matches at most this many of a query's identifiers, longest first."
    )
    max_bigram_terms: int = Field(
        48, ge=1, description="The CJK list matches at most this many character bigrams, and as many single characters."
    )
    recent_candidates: int = Field(10, ge=0, description="Most recent memories added as a chronological list.")
    window_candidates: int = Field(
        20, ge=0, description="The time window's memories nearest the question (first by time without query vectors)."
    )
    rrf_k: int = Field(
        3, ge=1, description="Reciprocal Rank Fusion constant; the paper's 60 scores 16 points lower on LoCoMo."
    )
    vector_weight: float = Field(1.0, ge=0)
    keyword_weight: float = Field(2.0, ge=0, description="BM25 outranks MiniLM vectors on LoCoMo (63.5 vs 42.2 @10).")
    trigram_weight: float = Field(1.0, ge=0, description="Weight of pg_trgm matches of identifiers.")
    bigram_weight: float = Field(2.0, ge=0, description="Weight of CJK character-bigram matches (BM25's role).")
    cjk_unigram_weight: float = Field(
        0.5, ge=0, description="In the CJK list a question's single characters score idf x this beside its bigrams."
    )
    recent_weight: float = Field(0.1, ge=0)
    window_weight: float = Field(1.0, ge=0)
    time_expressions: bool = Field(
        True,
        description="Without an LLM window, a time expression in the question (yesterday, last week, in March, 上周)"
        " becomes the time window, counted from recall's as_of (pipeline/time_expressions.py).",
    )
    rewrite_weight: float = Field(
        0.5,
        ge=0,
        description="Scales the vector and keyword lists of the planner's rewrites (the question's own: 1); 0.5 kept"
        " the multi-hop gain of Qwen2.5 plans and lost no question against 1 (evals/README.md).",
    )
    neighbor_weight: float = Field(0.5, ge=0, description="Share of a neighbour's score a memory inherits.")
    neighbor_span: int = Field(2, ge=1, description="Memories on each side (by occurred_at) that count as neighbours.")
    neighbor_anchors: int = Field(30, ge=1, description="Top fused memories whose neighbours inherit score.")
    neighbor_max_gap_s: float = Field(
        3600.0, ge=0, description="Neighbours are at most this many seconds apart (one conversation, not a fact log)."
    )
    neighbor_aggregate: Literal["max", "sum"] = Field(
        "max",
        description="What a memory inherits from the anchors it neighbours: the best score, or the sum (an episode"
        " with several matches counts more).",
    )
    vector_feedback: int = Field(
        0, ge=0, description="Vector feedback: top fused memories whose centroid is searched as one more list (0: off)."
    )
    vector_feedback_weight: float = Field(0.5, ge=0, description="Weight of the vector feedback list.")
    prf_memories: int = Field(
        0, ge=0, description="Pseudo-relevance feedback: top fused memories whose words expand the query (0: off)."
    )
    prf_terms: int = Field(8, ge=1, description="Words of those memories (highest idf first) added to the query.")
    prf_weight: float = Field(1.0, ge=0, description="Weight of the expanded BM25 list.")
    entity_weight: float = Field(
        0.0, ge=0, description="Weight of the entity list: BM25 among memories naming the question's names (0: off)."
    )
    rerank_url: str | None = Field(
        None,
        description="A /rerank endpoint (TEI, vLLM, Jina, Cohere, Voyage) that reorders the top candidates; unset: off.",
    )
    rerank_model: str | None = Field(None, description="The model name the rerank endpoint expects, if any.")
    rerank_api_key: str | None = Field(None, description="Sent as a Bearer token to the rerank endpoint.")
    rerank_candidates: int = Field(30, ge=2, le=200, description="Top fused candidates sent to the reranker.")
    rerank_timeout_s: float = Field(5.0, gt=0, description="Past this the fused order is kept (noted in the audit).")
    half_life_days: float | None = Field(None, gt=0, description="Recency half-life; unset disables the decay.")
    importance_weight: float = Field(0.0, ge=0, description="Boost per unit of stored importance (0..1).")
    implicit_updates: bool = Field(
        True,
        description=(
            "Rank the newer of two candidates that state different values of the same thing for the same subject"
            " right above the older (pipeline/implicit_updates.py); nothing is dropped."
        ),
    )
    subject_updates: bool = Field(
        False,
        description=(
            "For a question about the present, rank the later of two candidates about the same subject as the"
            " question right above the earlier (pipeline/subject_updates.py); nothing is dropped."
        ),
    )
    exact_search_max_memories: int = Field(
        20_000, ge=0, description="Sessions up to this size get an exact vector scan; larger ones use HNSW."
    )
    vector_cache_mb: int = Field(
        128,
        ge=0,
        description="Memory for in-process copies of exact-scan sessions' vectors (0: scan in PostgreSQL).",
    )
    hnsw_ef_search: int = Field(
        800, ge=1, le=1000, description="HNSW candidate list for large sessions (recall@10 0.97 at 100k of 1M, measured)."
    )
    refusal: str = "Not enough memories in this session to answer this question."


class SupersedeSettings(SettingsGroup):
    """Supersession found by the LLM on store (``llm.supersede_model``); explicit ``supersedes`` needs none."""

    llm_on_store: bool = Field(
        True, description="Ask llm.supersede_model after each new memory; false turns it off even with a model set."
    )
    candidates: int = Field(5, ge=1, le=32, description="Nearest current memories shown to the model per store.")
    min_similarity: float = Field(
        0.5, ge=-1.0, le=1.0, description="Cosine similarity (1 - distance) a memory needs to be shown to the model."
    )
    keyword_candidates: int = Field(
        2, ge=0, le=32, description="Also shown: the best keyword matches (BM25, CJK bigrams) not among the nearest."
    )
    check_words: bool = Field(True, description="A pick stands only when the words show an update; false trusts the model.")


_ENV_PREFIX = "MCP_MEMORY_"
# MCP_MEMORY_* variables that are not settings: the config file's path, and what the evals and the
# test suite read.
_NOT_SETTINGS = frozenset({"CONFIG", "LOCOMO_PATH", "TEST_DATABASE_URL", "CITUS_SOURCE"})


class Settings(BaseSettings):
    """Every setting of the server. Construct with keyword arguments in tests."""

    model_config = SettingsConfigDict(
        env_prefix=_ENV_PREFIX,
        env_nested_delimiter="__",
        # "" is unset: a Claude Desktop bundle (manifest.json) passes each option it declares, "" when left empty
        env_ignore_empty=True,
        extra="forbid",  # a misspelt top-level key in the TOML file is an error, as in the groups
        toml_file=None,
    )

    data_dir: Path = Field(
        default_factory=lambda: platformdirs.user_data_path("mcp-memory"),
        description="Embedded PostgreSQL data and the model cache live here.",
    )
    database_url: str | None = Field(None, description="External PostgreSQL with pgvector >= 0.8.4; unset = embedded.")
    distribute: bool = Field(
        True, description="On a database with the citus extension, distribute the tables by session at start."
    )
    pool_min_size: int = Field(1, ge=0)
    pool_max_size: int = Field(10, ge=1)
    statement_timeout_ms: int = Field(
        5_000, ge=0, description="PostgreSQL stops any one statement of a tool call after this long (0: never)."
    )
    log_level: Annotated[Literal["DEBUG", "INFO", "WARNING", "ERROR"], BeforeValidator(lambda v: str(v).upper())] = (
        "INFO"
    )
    log_format: Literal["text", "json"] = Field("text", description="Log lines on stderr: text, or one JSON object each.")
    limits: LimitSettings = LimitSettings()
    embedding: EmbeddingSettings = EmbeddingSettings()
    llm: LlmSettings = LlmSettings()
    recall: RecallSettings = RecallSettings()
    supersede: SupersedeSettings = SupersedeSettings()
    auth: AuthSettings = AuthSettings()
    http: HttpSettings = HttpSettings()
    stdio: StdioSettings = StdioSettings()
    metrics: MetricsSettings = MetricsSettings()
    privacy: PrivacySettings = PrivacySettings()

    _read = field_validator("*", mode="before")(classmethod(read_setting))  # type: ignore[arg-type]

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        toml_file = settings_cls.model_config.get("toml_file") or os.environ.get("MCP_MEMORY_CONFIG")
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        if toml_file:
            sources.append(TomlConfigSettingsSource(settings_cls, toml_file=Path(toml_file)))
        return tuple(sources)

    @classmethod
    def keys_at(cls, loc: tuple[int | str, ...]) -> list[str]:
        """The keys of the group at ``loc`` (a pydantic error's path: group names, list positions),
        in declaration order; [] where ``loc`` names no group."""
        model: type[BaseModel] | None = cls
        for part in loc:
            if isinstance(part, int):
                continue  # a position in a list of groups ([[auth.tokens]]): the group is the item's
            field = model.model_fields.get(part) if model else None
            kinds = [field.annotation, *get_args(field.annotation)] if field else []
            kinds += [arg for kind in kinds for arg in get_args(kind)]
            model = next((k for k in kinds if isinstance(k, type) and issubclass(k, BaseModel)), None)
        return list(model.model_fields) if model else []

    @classmethod
    def load(cls, config_path: Path | None = None) -> Settings:
        """Read settings from the environment and the TOML file.

        Args:
            config_path: ``--config`` from the command line; wins over ``MCP_MEMORY_CONFIG``.

        Raises:
            ConfigError: the file does not exist, or an ``MCP_MEMORY_*`` variable names no setting
                (pydantic-settings would ignore it silently).
        """
        from mcp_memory.errors import ConfigError

        unknown = sorted(
            name
            for name in os.environ
            if name.startswith(_ENV_PREFIX)
            and name[len(_ENV_PREFIX) :] not in _NOT_SETTINGS
            and name[len(_ENV_PREFIX) :].split("__", 1)[0].lower() not in cls.model_fields
        )
        if unknown:
            raise ConfigError(
                f"unknown setting {', '.join(unknown)} in the environment; settings are "
                f"{', '.join(_ENV_PREFIX + field.upper() for field in cls.model_fields)} (groups take __<KEY>)"
            )
        if config_path is not None:
            if not config_path.is_file():
                raise ConfigError(f"config file not found: {config_path}")
            from_file = type("Settings", (cls,), {"model_config": {**cls.model_config, "toml_file": config_path}})
            return from_file()
        if (named := os.environ.get("MCP_MEMORY_CONFIG")) and not Path(named).is_file():
            raise ConfigError(f"MCP_MEMORY_CONFIG names a file that does not exist: {named}")
        return cls()
