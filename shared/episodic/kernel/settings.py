"""One settings model: environment (EPISODIC_*), then the user's config file, then defaults."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import Field, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from episodic.kernel.errors import ConfigError
from episodic.kernel.models import (
    DEFAULT_KEYWORD_WEIGHT,
    DEFAULT_RENDERING_WEIGHTS,
    LOCAL_TENANT,
    RENDERINGS,
    UNEMBEDDED_WHEN_UNUSED,
    check_tenant,
)
from episodic.plumbing import envsource


class _MappingSource(PydanticBaseSettingsSource):
    def __init__(self, settings_cls: type[BaseSettings], values: Mapping[str, Any]) -> None:
        super().__init__(settings_cls)
        self._values = dict(values)

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return self._values.get(field_name), field_name, False

    def __call__(self) -> dict[str, Any]:
        names = set(self.settings_cls.model_fields)
        return {k: v for k, v in self._values.items() if k in names and v is not None}


class Settings(BaseSettings):
    model_config = SettingsConfigDict(extra="ignore", validate_default=True)

    # where things live
    home: Path = Field(default_factory=lambda: envsource.home_dir())
    claude_config_dir: str | None = None  # from CLAUDE_CONFIG_DIR (comma list)
    xdg_config_home: str | None = None  # from XDG_CONFIG_HOME
    user_home: str | None = None  # from HOME
    codex_home: str | None = None  # from CODEX_HOME (Codex CLI; default ~/.codex)
    gemini_cli_home: str | None = None  # from GEMINI_CLI_HOME (Gemini CLI; default ~, holding .gemini/)

    # backends (chosen in one place: episodic.assembly)
    tenant: str = LOCAL_TENANT
    store: Literal["sqlite", "s3vectors", "opensearch"] = (
        "sqlite"  # opensearch: cards on OpenSearch Serverless
    )
    embedder: Literal["minilm", "hashing", "titan"] = "minilm"
    distiller: Literal["heuristic", "bedrock", "claude-code", "codex", "gemini"] = "heuristic"
    # default: every rendering that votes or is queried (`reflect` at weight 0 is not embedded: _used_renderings)
    renderings: list[str] = Field(default_factory=lambda: list(RENDERINGS))
    query_rendering: str = "all"  # the rendering queries are compared with; `all` blends the weighted ones
    # how much each rendering counts in the blended cosine, and the keyword half's weight (store.hybrid)
    rendering_weights: dict[str, float] = Field(default_factory=lambda: dict(DEFAULT_RENDERING_WEIGHTS))
    keyword_weight: float = Field(default=DEFAULT_KEYWORD_WEIGHT, ge=0.0, le=10.0)
    hashing_dimension: int = 384
    # a folder of vectors by text (embed.cache): a rebuilt index, or another home, reuses them; unset: none kept
    embedding_cache_dir: Path | None = None

    # parsing, survey, scrubbing
    survey_token_budget: int = 6000
    tool_output_chars: int = 4000  # each tool output is cut head+tail to this many characters
    max_transcript_bytes: int = 512 * 1024 * 1024  # a larger file (or any non-regular file) is skipped
    scrub_patterns: list[str] = Field(default_factory=list)  # extra regexes, redacted as [REDACTED:custom]

    # search
    default_k: int = 3
    max_k: int = 5
    min_similarity: float | None = None  # None: the embedder's calibrated default
    # the confidence tiers of a hit (episodic.core.confidence; chosen on the dev set: docs/retrieval.md)
    strong_score: float = Field(default=3.5, ge=0.0, le=50.0)  # fused score for a full card
    weak_score: float = Field(
        default=3.25, ge=0.0, le=50.0
    )  # fused score for a pointer the hook gives unasked
    faint_score: float = Field(default=2.0, ge=0.0, le=50.0)  # fused score for an entry an agent asked for
    # the second stage (ports.Reranker) over the first stage's best `rerank_depth` candidates; none: off
    # local: the cross-encoder judge (episodic.judge), used where its model is installed; bedrock: Amazon
    # Bedrock's Rerank API (aws_region)
    reranker: Literal["none", "bedrock", "local"] = "local"
    rerank_depth: int = Field(default=20, ge=1, le=100)
    # a second stage that has not answered by then is abandoned and the first stage's answer kept (0: wait);
    # it must fit the hook's budget with the first stage and the reply
    rerank_seconds: float = Field(default=0.6, ge=0.0, le=30.0)
    judge_model_dir: Path | None = None  # None: where `episodic.judge.install` puts it (the venv)
    # candidates the local judge reads per search: 3 gained as much recall@1 as 8 on the dev set at 3/8 of the
    # time, and cannot move recall@3 (docs/retrieval.md, "The local judge")
    judge_depth: int = Field(default=3, ge=1, le=100)
    judge_max_tokens: int = Field(default=160, ge=16, le=512)  # word pieces of query + card per pair
    # the logit's weight beside the fused score per card kind (None: that kind is not judged): LLM cards 1.0 (the
    # weight unseen corpora favoured, no loss on dev, better on the fresh set); offline cards lose recall@1 to
    # the judge at every weight (docs/retrieval.md, "The local judge")
    judge_llm_weight: float | None = Field(default=1.0, ge=0.0, le=10.0)
    judge_offline_weight: float | None = Field(default=None, ge=0.0, le=10.0)
    judge_offline_reads: Literal["opening", "card"] = "opening"
    # the judge's probability for a full card (episodic.core.confidence; None: the fused score's bars decide). 0.5,
    # its own decision point, is the bar each dev fold chooses with at most one of its negatives given a card
    judge_strong: float | None = Field(default=0.5, ge=0.0, le=1.0)
    # below this probability a judged hit gets no pointer from the hook, only a faint entry for an agent that
    # asks (None: the fused score's bars decide). Fold A chose 0.002, fold B 0.001 (the most targets as card or
    # pointer with at most 0.40 of the negatives given anything); read on B: negatives with anything 0.438 -> 0.312,
    # targets as card or pointer 0.571 -> 0.560 (scripts/studies/study_judge.py)
    judge_weak: float | None = Field(default=0.002, ge=0.0, le=1.0)
    # a judged full card also needs the full-card gate (episodic.core.full_card_gate: judge logit, margin over
    # the next judged hit, fused score, rare shared words) at least this sure (None: the judge's bar alone)
    judge_gate: float | None = Field(default=0.6, ge=0.0, le=1.0)
    # a full card (judged or not) needs the words the prompt shares with it to weigh at least this much in the
    # keyword half (BM25, IDF over the tenant's own cards): a card of generic words shares only common ones
    strong_min_keyword: float = Field(default=1.0, ge=0.0)
    rerank_model_id: str = "amazon.rerank-v1:0"  # us-east-1 serves only cohere.rerank-v3-5:0
    # a hit the reranker scores below this relevance is put under the faint bar (0: off; measure it first)
    rerank_min_relevance: float = Field(default=0.0, ge=0.0, le=1.0)

    # serving and the hook
    host: str = "127.0.0.1"
    port: int = Field(default=8765, ge=0, le=65535)  # 0: `serve` picks a free one
    url: str | None = None  # the MCP endpoint the hook asks (default: the local server)
    token: str | None = None
    hook_budget_seconds: float = 1.5
    hook_max_chars: int = 4000
    hook_autostart: bool = True  # the hook starts a background `episodic serve` when no local one answers
    hook_prompt: bool = True  # the prompt hook injects (false: it skips; `setup codex|gemini` removes it)
    allowed_origins: list[str] = Field(default_factory=list)
    allowed_hosts: list[str] = Field(default_factory=list)  # Host names beside localhost (a proxy's)
    serve_read_timeout_seconds: float = 10.0  # a connection silent this long is closed
    serve_max_connections: int = 64  # concurrent connections (one thread each); more get a 503
    serve_request_deadline_seconds: float = 10.0  # request line, headers and body must all arrive by then
    serve_max_connections_per_client: int = 16  # per source address other than loopback

    # AWS
    aws_region: str | None = None
    aws_profile: str | None = None
    bedrock_model_id: str = "us.anthropic.claude-sonnet-4-6"
    titan_model_id: str = "amazon.titan-embed-text-v2:0"
    titan_dimension: int = 1024
    vector_bucket: str | None = None
    vector_index: str = "episodes"
    transcripts_bucket: str | None = None
    transcripts_prefix: str = "transcripts/"
    cards_prefix: str = "cards/"
    kms_key_id: str | None = None  # SSE-KMS key for uploads and archived cards (bucket default when unset)
    failures_prefix: str = "failures/"
    auth_secret_id: str = "episodic/tokens"  # Secrets Manager secret mapping token hashes to tenants
    idempotency_table: str = "episodic-idempotency"
    read_only: bool = False  # serve the read tools only (the stack's -c readOnly=true)

    # a coding agent's own CLI as distiller (distill.agent_cli): Claude Code, Codex CLI, Gemini CLI
    claude_binary: str = "claude"
    claude_model: str | None = None
    codex_binary: str = "codex"
    codex_model: str | None = None  # None: `codex exec`'s default model
    gemini_binary: str = "gemini"
    gemini_model: str | None = None  # None: Gemini CLI's default model
    distill_concurrency: int = 2
    distill_timeout_seconds: float = 180.0
    background_distill_processes: int = Field(
        default=1, ge=1
    )  # distiller CLI runs the SessionEnd hook may start at once
    distill_daily_cap: int = Field(
        default=20, ge=0
    )  # SessionEnd distils a day (0: none); `index` is not capped
    # the session-end hook (Claude Code's and Gemini CLI's SessionEnd, Codex's Stop) distils the ended session;
    # false: the hook returns at once, whatever hooks file still names it
    hook_session_end: bool = True
    distill_quiet_seconds: float = Field(default=300.0, ge=0)  # Codex's turn ended: distil after this quiet

    # harvest
    quiet_minutes: float = 15.0

    # human review (episodic.cards.review, `episodic ui`): when on, the hook injects approved cards only
    review_required: bool = False
    # the holdout experiment (episodic.experiment) and per-project scope (episodic.sessions.scope): paths or globs
    experiment_enabled: bool = True  # off: every eligible prompt gets memory, nothing is logged
    experiment_holdout: float = Field(default=0.10, ge=0.0, le=0.5)  # share of sessions without memory
    index_include: list[str] = Field(default_factory=list)  # set: only these projects are remembered
    index_exclude: list[str] = Field(default_factory=list)
    inject_include: list[str] = Field(default_factory=list)  # set: memory is injected only here
    inject_exclude: list[str] = Field(default_factory=list)

    @field_validator("index_include", "index_exclude", "inject_include", "inject_exclude", mode="before")
    @classmethod
    def _split_scope_patterns(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    # dreaming (episodic.dream): weekly records
    dream_exemplar: str | None = None  # the record new ones follow (None: the built-in exemplar)
    dreams_prefix: str = "dreams/"  # on AWS: records in the transcripts bucket under <prefix><tenant>/
    dream_session_start: bool = False  # `episodic hook session-start` injects the latest synthesis
    dream_session_start_chars: int = Field(default=2000, ge=200, le=20000)
    # scratch memory of tool outcomes (episodic.scratch): short-horizon, tenant-scoped, recalled at planning
    scratch_memory: bool = True  # extract outcome records on indexing and serve recall_similar
    scratch_store: Literal["sqlite", "opensearch"] = "sqlite"
    scratch_ttl_days: int = Field(default=7, ge=3, le=14)  # records older than this are invisible and swept
    scratch_k: int = Field(default=3, ge=3, le=5)
    scratch_min_similarity: float | None = None  # None: the embedder's calibrated default
    scratch_max_per_session: int = Field(default=4, ge=1, le=10)
    scratch_deadline_seconds: float = Field(default=0.4, gt=0, le=5)  # recall gives up (empty) after this
    # an agent's recall_similar call or the CLI waits longer: it is asked for, and it may load the embedder
    scratch_agent_deadline_seconds: float = Field(default=3.0, gt=0, le=30)
    hook_scratch: bool = True  # the prompt hook adds "Prior similar attempts" after the episodes
    # failure memory (episodic.failures): errors a session met and got past, by signature
    failure_memory: bool = True  # record them on indexing and serve recall_failure
    failure_min_words: int = Field(default=2, ge=1, le=20)  # fewer words: too generic (bench_failures.py)
    failure_same_check: bool = True  # only a fix proved by the same check (`go test`, `mise run lint`)
    hook_failure: bool = True  # the PostToolUseFailure hook injects a fix (EPISODIC_HOOK_FAILURE=false: off)
    # injection records (episodic.injections): what memory gave each session and what the session did with it
    injections_enabled: bool = True  # off: nothing is recorded and no steering rule applies
    injections_table: str | None = None  # the AWS deployment's DynamoDB table (none: nothing recorded there)
    injections_keep_days: int = Field(
        default=90, ge=1, le=3650
    )  # older records are removed on each index run
    injections_keep_per_tenant: int = Field(default=50_000, ge=100)  # and each tenant's oldest beyond this
    injections_never_twice: bool = True  # a card given to a session is never given to it again
    injections_hubs: bool = (
        False  # a card given often and never used is shown as a pointer (docs/injections.md)
    )
    injections_hub_given: int = Field(default=5, ge=2)  # "often": given at least this many times, none used
    injections_promote: bool = False  # a pointer opened often is shown as a card (docs/injections.md)
    injections_promote_opened: int = Field(default=3, ge=1)  # opened this many times, in half its pointers
    # OpenSearch Serverless (scratchMemory=opensearch / cards on OpenSearch): the collection endpoint, SigV4 `aoss`
    opensearch_endpoint: str | None = None
    opensearch_scratch_index: str = "episodic-scratch"
    opensearch_cards_index: str = "episodic-cards"
    # history tools (episodic.history): the AWS deployment's DynamoDB table and S3 prefix for the records
    history_table: str | None = None
    history_prefix: str = "history/"
    history_enabled: bool = True  # False: ingestion keeps no history records (cards only)
    # each indexed session's scrubbed trajectory, compressed under <home>/trajectories/<tenant>/, so a card
    # can be re-distilled and its transcript shown after the agent deleted the file (episodic.store.kept_trajectories)
    keep_trajectories: bool = True
    keep_trajectories_max_mb: float = Field(default=512.0, gt=0)  # per tenant; the oldest sessions go first

    @field_validator(
        "judge_llm_weight", "judge_offline_weight", "judge_strong", "judge_weak", "judge_gate", mode="before"
    )
    @classmethod
    def _weight_off(cls, value: Any) -> Any:
        """`none` / `off` / "" (an environment variable or the config file): that card kind is not judged."""
        return None if isinstance(value, str) and value.strip().lower() in ("", "none", "off") else value

    @field_validator("tenant")
    @classmethod
    def _tenant_name(cls, value: str) -> str:
        try:  # the one tenant rule: a configured `tenant` names a folder and a store key like --tenant
            return check_tenant(value)
        except Exception as exc:
            raise ValueError(str(exc)) from exc

    @field_validator("renderings", "scrub_patterns", "allowed_origins", "allowed_hosts", mode="before")
    @classmethod
    def _split_commas(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @field_validator("renderings")
    @classmethod
    def _known_renderings(cls, value: list[str]) -> list[str]:
        unknown = [r for r in value if r not in RENDERINGS]
        if unknown or not value:
            raise ValueError(f"renderings must be a non-empty subset of {list(RENDERINGS)}, got {value}")
        return value

    @field_validator("rendering_weights", mode="before")
    @classmethod
    def _parse_weights(cls, value: Any) -> Any:
        """`struct:1,semantic:1,reflect:0` (env / config string) or a mapping."""
        if isinstance(value, str):
            pairs = [part.split(":", 1) for part in value.split(",") if part.strip()]
            if any(len(p) != 2 for p in pairs):
                raise ValueError(f"rendering_weights must look like 'struct:1,semantic:1', got {value!r}")
            return {name.strip(): float(weight) for name, weight in pairs}
        return value

    @field_validator("rendering_weights")
    @classmethod
    def _known_weights(cls, value: dict[str, float]) -> dict[str, float]:
        unknown = [r for r in value if r not in RENDERINGS]
        if unknown or any(w < 0 for w in value.values()) or not any(w > 0 for w in value.values()):
            raise ValueError(
                f"rendering_weights must give renderings of {list(RENDERINGS)} weights >= 0, one > 0; got {value}"
            )
        return value

    @field_validator("query_rendering")
    @classmethod
    def _known_query_rendering(cls, value: str) -> str:
        if value != "all" and value not in RENDERINGS:
            raise ValueError(f"query_rendering must be 'all' or one of {list(RENDERINGS)}, got {value!r}")
        return value

    @model_validator(mode="after")
    def _used_renderings(self) -> Settings:
        """Unless renderings are set, an optional one (store.parity) that neither votes nor is queried is not
        embedded: a first index spends ~1/4 less on `reflect`, which the default ranking gives weight 0."""
        if "renderings" not in self.model_fields_set:
            self.renderings = [
                r
                for r in self.renderings
                if r not in UNEMBEDDED_WHEN_UNUSED
                or self.rendering_weights.get(r, 0.0) > 0
                or self.query_rendering == r
            ]
        return self

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        env = envsource.environ()
        from_env: dict[str, Any] = envsource.prefixed(env)
        foreign = {
            "claude_config_dir": env.get("CLAUDE_CONFIG_DIR"),
            "xdg_config_home": env.get("XDG_CONFIG_HOME"),
            "user_home": env.get("HOME"),
            "codex_home": env.get("CODEX_HOME"),
            "gemini_cli_home": env.get("GEMINI_CLI_HOME"),
        }
        file_values = envsource.read_config_file(envsource.config_path(env))
        return (
            init_settings,
            _MappingSource(settings_cls, from_env),
            _MappingSource(settings_cls, file_values),
            _MappingSource(settings_cls, foreign),
        )

    @property
    def db_path(self) -> Path:
        return self.home / "index.sqlite3"

    @property
    def cache_dir(self) -> Path:
        return self.home / "cache"

    @property
    def log_dir(self) -> Path:
        return self.home / "logs"

    @property
    def tokens_path(self) -> Path:
        return self.home / "tokens.json"

    @property
    def endpoint_url(self) -> str:
        return self.url or f"http://{self.host}:{self.port}/mcp"


class DeployedSettings(Settings):
    """The distill and MCP Lambdas' settings (the stack sets EPISODIC_*): what the AWS memory cannot run
    without is required, so a missing variable fails the cold start with its name, not the first request."""

    store: Literal["s3vectors", "opensearch"] = "s3vectors"  # opensearch: -c cardStore=opensearch
    vector_bucket: str = Field(min_length=3)
    transcripts_bucket: str = Field(min_length=3)


def load_settings(**overrides: Any) -> Settings:
    """Build the settings, turning validation errors into one ConfigError a user can act on."""
    return _load(Settings, overrides)


def load_deployed_settings(**overrides: Any) -> DeployedSettings:
    """The Lambdas' settings, validated at cold start (EPISODIC_VECTOR_BUCKET and friends required)."""
    return _load(DeployedSettings, overrides)


def config_warnings(path: Path | None = None) -> list[str]:
    """The config file's keys no setting reads, one warning each (a typo would otherwise be ignored)."""
    from episodic.kernel.config_check import unknown_keys

    return unknown_keys(Settings.model_fields, path)


SettingsT = TypeVar("SettingsT", bound=Settings)


def _load(model: type[SettingsT], overrides: dict[str, Any]) -> SettingsT:
    try:
        return model(**{k: v for k, v in overrides.items() if v is not None})
    except ValidationError as exc:
        missing = [
            f"EPISODIC_{'_'.join(str(p) for p in e['loc']).upper()}"
            for e in exc.errors()
            if e["type"] == "missing"
        ]
        if missing:
            raise ConfigError(f"required in the AWS deployment: {', '.join(missing)}") from exc
        from episodic.kernel.config_check import validation_message

        raise ConfigError(validation_message(exc, overrides)) from exc
    except ValueError as exc:
        raise ConfigError(str(exc)) from exc
