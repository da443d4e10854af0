"""Amazon Bedrock's Rerank API (`bedrock-agent-runtime` Rerank) as the second stage (ports.Reranker).

One call per search: the (scrubbed) query and each candidate card as the agent would read it
(`present.pack_card`, cards are scrubbed when indexed), `numberOfResults` = every candidate sent.

Documented limits, enforced here rather than discovered as a ValidationException:
- models and regions: Amazon Rerank 1.0 (`amazon.rerank-v1:0`) in ap-northeast-1, ca-central-1, eu-central-1
  and us-west-2 (not us-east-1); Cohere Rerank 3.5 (`cohere.rerank-v3-5:0`) there and in us-east-1
  (docs.aws.amazon.com/bedrock/latest/userguide/rerank-supported.html). Another model or region is a
  ConfigError when the adapter is built (a Lambda's cold start), naming the regions that would work;
- one query, 1-1,000 sources, each text 1-32,000 characters (the API reference / botocore's model). A billed
  query holds up to 100 document chunks (rerank-pricing.html), so at most MAX_SOURCES candidates are sent:
  a deeper first stage keeps its order after them. Each card is cut to DOCUMENT_CHARS (~400 tokens) and the
  query to QUERY_CHARS, so a card and the query fit one chunk's context and 20 candidates are one query.

How the relevance score meets the confidence tiers (episodic.core.confidence reads `score` and `similarity`):
- the order is the model's (relevanceScore, best first; ties keep the first stage's order);
- the scores stay on the first stage's scale: the first stage's scores, sorted, are handed out by the new
  rank (the hit the model puts first gets the best fused score of the pool, and so on). `similarity`
  stays each hit's own cosine, so a hit the model lifts from far down still needs its own cosine to be
  strong: the model can reorder, not invent evidence;
- a hit the model rates below `min_relevance` gets a score just under the faint bar (`faint_score`), so
  no face offers it as evidence. Below confidence.MIN_POOL cards the tiers read the cosine alone, so in
  such a small index a demoted hit can still be listed: after every hit the model found relevant.
  `min_relevance` defaults to 0 (off): it is a bar to measure on a deployment's own cards, not a guess.

Failures never fail a search: a throttled, timed-out or otherwise failed call (or a response that does not
cover every candidate exactly once) keeps the first stage's order and scores, and is logged (a timeout as a
timeout). A call refused for configuration (AccessDeniedException: no model access or no IAM permission;
ResourceNotFoundException: a model the region does not serve) is logged once as an error naming the fix,
and the adapter then stays off for the life of the process instead of paying a refused call per search.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from episodic.cards.present import pack_card
from episodic.kernel.errors import ConfigError, InvalidArgumentError, error_code, error_message
from episodic.kernel.models import SearchHit
from episodic.kernel.ports import Reranker

log = logging.getLogger(__name__)

# the reranker models and the regions that serve them (rerank-supported.html; rules as data)
RERANK_MODEL_REGIONS: dict[str, tuple[str, ...]] = {
    "amazon.rerank-v1:0": ("ap-northeast-1", "ca-central-1", "eu-central-1", "us-west-2"),
    "cohere.rerank-v3-5:0": ("ap-northeast-1", "ca-central-1", "eu-central-1", "us-east-1", "us-west-2"),
}
API_MAX_SOURCES = 1000  # RerankSourcesList
API_MAX_TEXT_CHARS = 32_000  # RerankTextDocumentTextString, for the query and each document
MAX_SOURCES = 100  # one billed query holds up to 100 document chunks
DOCUMENT_CHARS = 1500  # a card as pack_card gives it to an agent (~400 tokens)
QUERY_CHARS = 2000  # search.MAX_QUERY_CHARS: the query is never cut shorter than search_traces cuts it
# refused for configuration: the same refusal would come back on every search
CONFIG_CODES = frozenset({"AccessDeniedException", "ResourceNotFoundException"})


def model_arn(model_id: str, region: str) -> str:
    return f"arn:aws:bedrock:{region}::foundation-model/{model_id}"


def check_model_region(model_id: str, region: str | None) -> str:
    """The region the model is called in; ConfigError for a model Rerank does not take or a region without it."""
    regions = RERANK_MODEL_REGIONS.get(model_id)
    if regions is None:
        raise ConfigError(
            f"rerank_model_id {model_id!r} is not a Bedrock reranker model: use one of {sorted(RERANK_MODEL_REGIONS)}"
        )
    if not region:
        raise ConfigError("the Bedrock reranker needs a region: set EPISODIC_AWS_REGION (or AWS_REGION)")
    if region not in regions:
        others = [m for m, where in RERANK_MODEL_REGIONS.items() if region in where]
        fix = f"; in {region} use rerank_model_id={others[0]}" if others else ""
        raise ConfigError(f"{model_id} reranks only in {', '.join(regions)}, not {region}{fix}")
    return region


class BedrockReranker(Reranker):
    name = "bedrock"

    def __init__(
        self,
        client: Any,
        model_id: str = "amazon.rerank-v1:0",
        *,
        region: str | None = None,
        depth: int = 20,
        min_relevance: float = 0.0,
        faint_score: float = 2.0,
    ) -> None:
        if not 1 <= depth <= MAX_SOURCES:
            raise ConfigError(
                f"rerank_depth must be between 1 and {MAX_SOURCES} for Bedrock Rerank, got {depth}"
            )
        if not 0.0 <= min_relevance <= 1.0:
            raise ConfigError(f"rerank_min_relevance is a relevance score in [0, 1], got {min_relevance}")
        self.client = client  # the call goes to the client's region: the model ARN names that one
        self.model_id = model_id
        self.region = check_model_region(
            model_id, getattr(getattr(client, "meta", None), "region_name", None) or region
        )
        self.model_arn = model_arn(model_id, self.region)
        self.depth = depth
        self.min_relevance = min_relevance
        self.below_faint = faint_score - 0.01  # a demoted hit's score: just under the faint bar
        self.disabled: str | None = None  # why the adapter stopped calling (a configuration refusal)

    def request(self, query: str, hits: Sequence[SearchHit]) -> dict[str, Any]:
        """The Rerank request for `query` and the first `depth` hits (what `rerank` sends)."""
        query = query.strip()[:QUERY_CHARS]
        if not query:
            raise InvalidArgumentError("the reranker needs a non-empty query")
        if not hits:
            raise InvalidArgumentError("the reranker needs at least one candidate")
        sent = hits[: min(self.depth, MAX_SOURCES, API_MAX_SOURCES)]
        documents = [pack_card(hit.record, max_chars=min(DOCUMENT_CHARS, API_MAX_TEXT_CHARS)) for hit in sent]
        return {
            "queries": [{"type": "TEXT", "textQuery": {"text": query}}],
            "sources": [
                {"type": "INLINE", "inlineDocumentSource": {"type": "TEXT", "textDocument": {"text": text}}}
                for text in documents
            ],
            "rerankingConfiguration": {
                "type": "BEDROCK_RERANKING_MODEL",
                "bedrockRerankingConfiguration": {
                    "modelConfiguration": {"modelArn": self.model_arn},
                    "numberOfResults": len(sent),
                },
            },
        }

    def rerank(self, query: str, hits: Sequence[SearchHit]) -> list[SearchHit]:
        if self.disabled is not None or min(len(hits), self.depth) < 2:  # nothing to reorder
            return list(hits)
        request = self.request(query, hits)
        sent = list(hits[: len(request["sources"])])
        try:
            response = self.client.rerank(**request)
        except Exception as exc:  # botocore's ClientError and connection errors: never fail a search
            self._failed(exc)
            return list(hits)
        ranked = _ranking(response, len(sent))
        if ranked is None:
            log.warning(
                "bedrock rerank: the response did not rank each of %d candidates once; first-stage order kept",
                len(sent),
            )
            return list(hits)
        slots = sorted((hit.score for hit in sent), reverse=True)
        reordered = []
        for slot, (index, relevance) in zip(slots, ranked, strict=True):
            score = slot if relevance >= self.min_relevance else min(slot, self.below_faint)
            reordered.append(sent[index].model_copy(update={"score": score}))
        return reordered + list(hits[len(sent) :])

    def _failed(self, exc: BaseException) -> None:
        code = error_code(exc)
        if code in CONFIG_CODES:
            self.disabled = f"{code}: {error_message(exc)}"
            log.error(
                "bedrock rerank refused (%s); searches keep the first stage's order until the fix and a restart: "
                "enable access to %s in %s and give the role bedrock:Rerank and bedrock:InvokeModel on %s",
                self.disabled,
                self.model_id,
                self.region,
                self.model_arn,
            )
        elif "timeout" in type(exc).__name__.lower():  # botocore ReadTimeoutError, ConnectTimeoutError
            log.warning("bedrock rerank timed out (%s); first-stage order kept", exc)
        else:
            log.warning("bedrock rerank failed (%s); first-stage order kept", code or type(exc).__name__)


def _ranking(response: Any, count: int) -> list[tuple[int, float]] | None:
    """(index, relevance) best first, ties in the first stage's order; None unless each index appears once."""
    results = response.get("results") if isinstance(response, dict) else None
    if not isinstance(results, list):
        return None
    pairs: list[tuple[int, float]] = []
    for result in results:
        index, relevance = result.get("index"), result.get("relevanceScore")
        if not isinstance(index, int) or not isinstance(relevance, int | float):
            return None
        pairs.append((index, float(relevance)))
    if sorted(i for i, _ in pairs) != list(range(count)):
        return None
    return sorted(pairs, key=lambda pair: (-pair[1], pair[0]))
