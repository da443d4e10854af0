"""Held-out queries written by an LLM: one symptom paraphrase per session, leaky ones rejected.

The leak rule (`leak_check`), applied to every generated query:
1. identifiers: a query token that looks like an identifier (has `_`, `.`, `/`, `-`, a digit or an
   inner capital, e.g. `read_file`, `ctx.Done`, `v2`, `camelCase`) and occurs in the transcript's
   commands, file paths or error outputs is a leak;
2. error strings: any four consecutive query words found in an error output of the transcript is a leak;
3. solution vocabulary: the query's content words (lower-cased, 3+ characters, stop words removed)
   are compared with the solution vocabulary (the terms the LLM lists as naming the cause and fix,
   plus the card's insight and key decisions when a card is given); more than a quarter of them
   found there (share > 0.25) is a leak.
A rejected query is asked for once more with the leaked words listed; a second leak skips the session.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from episodic.kernel.errors import THROTTLE_CODES, ConfigError, RetryableDistillError, error_code
from episodic.kernel.models import Card, Trajectory
from episodic.plumbing.marker import DISTILLER_MARKER

QueryWriter = Callable[[str], str]  # prompt -> the model's text (the one LLM call; injectable in tests)

MAX_SOLUTION_SHARE = 0.25
ERROR_SHINGLE = 4
SURVEY_TOKENS = 4000

STOP_WORDS = frozenset(
    [
        "a",
        "about",
        "after",
        "again",
        "all",
        "also",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "but",
        "by",
        "can",
        "cannot",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "done",
        "each",
        "even",
        "every",
        "few",
        "for",
        "from",
        "get",
        "gets",
        "got",
        "had",
        "has",
        "have",
        "having",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "it's",
        "just",
        "keep",
        "keeps",
        "like",
        "make",
        "makes",
        "me",
        "more",
        "most",
        "my",
        "no",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "one",
        "only",
        "or",
        "other",
        "our",
        "out",
        "over",
        "same",
        "should",
        "so",
        "some",
        "still",
        "such",
        "than",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "us",
        "very",
        "was",
        "way",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "why",
        "will",
        "with",
        "without",
        "would",
        "you",
        "your",
        "yet",
        "again",
        "anything",
        "something",
        "nothing",
        "thing",
        "things",
        "time",
        "times",
        "instead",
    ]
)

_WORD_RE = re.compile(r"[a-z0-9]+")
_RAW_TOKEN_RE = re.compile(r"[A-Za-z0-9_./\-]+")
_IDENTIFIER_RE = re.compile(r"[_./\-]|\d|[a-z][A-Z]")

PROMPT = """{marker}

Below is a summary of a past coding-agent session. Write the question a developer would type into a
search box when they meet the SAME problem again, months later, without remembering this session.

Rules for the query:
- describe the symptom or situation as the developer experiences it, in fresh everyday words;
- 8 to 25 words, one sentence;
- do NOT name the cause, the fix, or anything learned during the session;
- do NOT use identifiers, file names, function names, command names, flags, version numbers or
  error message text from the session.
{avoid}
Answer with one JSON object and nothing else:
{{"query": "<the query>", "solution_terms": ["<each word or short phrase that names the cause or the fix>"]}}

Session summary:
{survey}
"""


def content_words(text: str) -> list[str]:
    return [w for w in _WORD_RE.findall(text.lower()) if len(w) >= 3 and w not in STOP_WORDS]


def _identifier_tokens(texts: Iterable[str]) -> set[str]:
    found: set[str] = set()
    for text in texts:
        for raw in _RAW_TOKEN_RE.findall(text):
            for token in {raw, *raw.split("/")}:  # a path and each of its parts
                token = token.strip("./-")
                if len(token) >= 3 and _IDENTIFIER_RE.search(token):
                    found.add(token.lower())
    return found


@dataclass
class TranscriptVocabulary:
    """What a query must not copy from the session: identifiers and error-output word runs."""

    identifiers: set[str] = field(default_factory=set)
    error_shingles: set[tuple[str, ...]] = field(default_factory=set)

    @classmethod
    def of(cls, trajectory: Trajectory) -> TranscriptVocabulary:
        commands = [c.command or "" for c in trajectory.tool_calls]
        errors = [c.output for c in trajectory.tool_calls if c.is_error or (c.exit_code or 0) != 0]
        paths = [*trajectory.files_read, *trajectory.files_edited]
        shingles: set[tuple[str, ...]] = set()
        for output in errors:
            words = _WORD_RE.findall(output.lower())
            shingles.update(
                tuple(words[i : i + ERROR_SHINGLE]) for i in range(len(words) - ERROR_SHINGLE + 1)
            )
        return cls(identifiers=_identifier_tokens([*commands, *errors, *paths]), error_shingles=shingles)


@dataclass
class LeakReport:
    leaked: bool
    solution_share: float
    solution_words: list[str]
    identifiers: list[str]
    error_runs: list[str]

    @property
    def words(self) -> list[str]:
        return sorted({*self.solution_words, *self.identifiers, *self.error_runs})


def leak_check(
    query: str,
    solution_terms: Sequence[str],
    vocabulary: TranscriptVocabulary,
    card: Card | None = None,
) -> LeakReport:
    """Apply the three rules of the module docstring to one query."""
    solution_text = list(solution_terms)
    if card is not None:
        solution_text += [card.insight, *card.key_decisions]
    solution_vocab = set(content_words(" ".join(solution_text)))
    words = content_words(query)
    overlap = sorted({w for w in words if w in solution_vocab})
    share = (sum(1 for w in words if w in solution_vocab) / len(words)) if words else 0.0
    identifiers = sorted(
        {t.strip("./-").lower() for t in _RAW_TOKEN_RE.findall(query)}
        & {t for t in vocabulary.identifiers if _IDENTIFIER_RE.search(t)}
    )
    identifiers = [t for t in identifiers if _IDENTIFIER_RE.search(t)]
    plain = _WORD_RE.findall(query.lower())
    runs = {
        " ".join(plain[i : i + ERROR_SHINGLE])
        for i in range(len(plain) - ERROR_SHINGLE + 1)
        if tuple(plain[i : i + ERROR_SHINGLE]) in vocabulary.error_shingles
    }
    leaked = share > MAX_SOLUTION_SHARE or bool(identifiers) or bool(runs)
    return LeakReport(leaked, round(share, 3), overlap, identifiers, sorted(runs))


def parse_answer(text: str) -> tuple[str, list[str]]:
    """The query and solution terms from the model's answer (the first JSON object in it)."""
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        raise ValueError("the answer holds no JSON object")
    obj = json.loads(text[start : end + 1])
    query = obj.get("query") if isinstance(obj, dict) else None
    if not isinstance(query, str) or not query.strip():
        raise ValueError("the answer has no non-empty 'query'")
    terms = obj.get("solution_terms") or []
    return " ".join(query.split()), [str(t) for t in terms if isinstance(t, str | int)]


def bedrock_writer(client: Any, model_id: str, max_tokens: int = 400) -> QueryWriter:
    """A QueryWriter over Bedrock Converse (the client is injected: built by the caller, lazily)."""

    def write(prompt: str) -> str:
        try:
            response = client.converse(
                modelId=model_id,
                messages=[{"role": "user", "content": [{"text": prompt}]}],
                inferenceConfig={"maxTokens": max_tokens, "temperature": 0.4},
            )
        except Exception as exc:
            code = error_code(exc)
            if code in THROTTLE_CODES:
                raise RetryableDistillError(f"bedrock {code}") from exc
            raise
        blocks = response.get("output", {}).get("message", {}).get("content", [])
        return "".join(b.get("text", "") for b in blocks)

    return write


NO_LLM_MESSAGE = (
    "gen-queries needs an LLM to write the queries and none is configured: set "
    "EPISODIC_DISTILLER=bedrock (with AWS credentials and EPISODIC_AWS_REGION). The offline "
    "heuristic distiller cannot paraphrase a symptom without leaking the transcript's words."
)


def require_writer(writer: QueryWriter | None) -> QueryWriter:
    if writer is None:
        raise ConfigError(NO_LLM_MESSAGE)
    return writer


@dataclass
class GeneratedQuery:
    session_id: str
    file: str
    query: str
    solution_share: float


@dataclass
class GenerationReport:
    written: list[GeneratedQuery] = field(default_factory=list)
    rejected: list[tuple[str, str]] = field(default_factory=list)  # (session id, why)


def generate_query(
    trajectory: Trajectory, survey: str, writer: QueryWriter, card: Card | None = None, attempts: int = 2
) -> tuple[str | None, LeakReport | None, str]:
    """(query, its leak report, why-not) for one session; query None when every attempt leaked."""
    vocabulary = TranscriptVocabulary.of(trajectory)
    avoid = ""
    why = ""
    for _ in range(attempts):
        answer = writer(PROMPT.format(marker=DISTILLER_MARKER, avoid=avoid, survey=survey))
        try:
            query, terms = parse_answer(answer)
        except (ValueError, json.JSONDecodeError) as exc:
            why = f"unreadable answer: {exc}"
            continue
        report = leak_check(query, terms, vocabulary, card)
        if not report.leaked:
            return query, report, ""
        why = f"leaky query (share {report.solution_share}, words {', '.join(report.words)})"
        avoid = f"- in particular, do not use these words: {', '.join(report.words)}\n"
    return None, None, why


def generate_queries(
    trajectories: Sequence[Trajectory],
    surveys: Callable[[Trajectory], str],
    writer: QueryWriter | None,
    out: Path,
    roots: Sequence[Path],
    cards: dict[str, Card] | None = None,
    on_session: Callable[[], None] | None = None,
) -> GenerationReport:
    """One JSONL line per session whose query passes the leak check (`hard`: no leak allowed)."""
    writer = require_writer(writer)
    report = GenerationReport()
    lines: list[str] = []
    for trajectory in trajectories:
        card = (cards or {}).get(trajectory.session_id)
        query, leak, why = generate_query(trajectory, surveys(trajectory), writer, card)
        if query is None or leak is None:
            report.rejected.append((trajectory.session_id, why))
        else:
            file = _relative(Path(trajectory.source.main_path), roots)
            item = GeneratedQuery(trajectory.session_id, file, query, leak.solution_share)
            report.written.append(item)
            lines.append(
                json.dumps(
                    {
                        "id": f"g{len(report.written):03d}",
                        "session_id": item.session_id,
                        "file": item.file,
                        "query": item.query,
                        "difficulty": "hard",
                        "solution_share": item.solution_share,
                    },
                    ensure_ascii=False,
                )
            )
        if on_session:
            on_session()
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return report


def _relative(path: Path, roots: Sequence[Path]) -> str:
    for root in roots:
        try:
            return str(path.resolve().relative_to(root.resolve()))
        except ValueError:
            continue
    return path.name


def run_gen_queries(
    settings: Any,
    transcripts: Sequence[str | Path],
    out: Path,
    writer: QueryWriter | None,
    limit: int | None = None,
    progress: Any = None,
) -> GenerationReport:
    """Parse the corpus (cached), distill offline cards for the leak check, and write the queries."""
    from episodic.assembly import build_source
    from episodic.distill.heuristic import HeuristicDistiller
    from episodic.evaluation.cache import WorkCache
    from episodic.evaluation.corpus import distill_corpus, load_corpus
    from episodic.evaluation.progress import Progress
    from episodic.sessions.survey import render_survey

    writer = require_writer(writer)  # fail before any work
    progress = progress or Progress()
    cache = WorkCache(settings.cache_dir / "eval")
    corpus = load_corpus(settings, build_source(settings), [str(p) for p in transcripts], cache, progress)
    trajectories = list(corpus.trajectories.values())[: limit or None]
    distill_corpus(corpus, settings, HeuristicDistiller(), cache, progress)
    progress.start("writing queries", len(trajectories))
    return generate_queries(
        trajectories,
        lambda t: render_survey(t, SURVEY_TOKENS),
        writer,
        out,
        [Path(p) for p in transcripts],
        corpus.cards,
        on_session=progress.advance,
    )
