"""Amazon Titan Text Embeddings v2 on Bedrock (InvokeModel, one text per call, normalised float32).

Input cap: the model takes at most 50,000 characters and 8,192 tokens. Its tokenizer averages about
4.7 characters a token on English prose but far fewer on identifiers and symbols, so we cut at 24,000
characters (about 3 characters a token × 8,192); if Bedrock still reports too many tokens the text is
halved and sent again. Cards are a few KB, so the cap only guards against pathological input.

`default_min_similarity` = 0.3 is a calibrated *guess*, not a measurement: normalised Titan v2 vectors
of unrelated English sentences typically score below ~0.2 cosine, paraphrases above ~0.5. Measure it
on your corpus with the eval harness and set EPISODIC_MIN_SIMILARITY to override.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from episodic.aws._calls import RetriesExhausted, error_code, error_message, read_body, with_backoff
from episodic.kernel.errors import ConfigError, InvalidArgumentError, ParityError, RetryableDistillError
from episodic.kernel.ports import Embedder

DIMENSIONS = (1024, 512, 256)
MODEL_CHAR_LIMIT = 50_000
MAX_INPUT_CHARS = 24_000
THROTTLE_CODES = frozenset({"ThrottlingException", "ServiceUnavailableException", "ModelNotReadyException"})
_TOO_LONG_RE = re.compile(r"too (?:many|long)|token|exceed", re.I)


class TitanEmbedder(Embedder):
    default_min_similarity = 0.3

    def __init__(
        self,
        client: Any,
        model_id: str = "amazon.titan-embed-text-v2:0",
        dimension: int = 1024,
        *,
        max_attempts: int = 5,
        base_delay: float = 0.5,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if dimension not in DIMENSIONS:
            raise ConfigError(f"Titan v2 dimension must be one of {list(DIMENSIONS)}, got {dimension}")
        self.client = client
        self.model_id = model_id
        self.dimension = dimension
        self.id = f"titan-embed-text-v2-{dimension}"
        self.max_attempts = max_attempts
        self.base_delay = base_delay
        self.sleep = sleep

    def _invoke(self, text: str) -> dict[str, Any]:
        body = json.dumps(
            {"inputText": text, "dimensions": self.dimension, "normalize": True, "embeddingTypes": ["float"]}
        )

        def call() -> dict[str, Any]:
            response = self.client.invoke_model(
                modelId=self.model_id, body=body, contentType="application/json", accept="application/json"
            )
            parsed: dict[str, Any] = json.loads(read_body(response["body"]))
            return parsed

        return with_backoff(
            call,
            retry_codes=THROTTLE_CODES,
            attempts=self.max_attempts,
            base_delay=self.base_delay,
            sleep=self.sleep,
        )

    def embed_one(self, text: str) -> np.ndarray:
        text = text.strip()
        if not text:
            raise InvalidArgumentError("cannot embed an empty text")
        text = text[:MAX_INPUT_CHARS]
        while True:
            try:
                payload = self._invoke(text)
                break
            except RetriesExhausted as exc:
                raise RetryableDistillError(f"Titan embeddings throttled: {exc}") from exc
            except Exception as exc:
                code, message = error_code(exc), error_message(exc)
                if code == "ValidationException" and _TOO_LONG_RE.search(message) and len(text) > 1000:
                    text = text[: len(text) // 2]  # over the token limit despite the cap: halve and retry
                    continue
                if code in ("AccessDeniedException", "ResourceNotFoundException") or (
                    code == "ValidationException" and "model" in message.lower()
                ):
                    raise ConfigError(f"Titan model {self.model_id!r} refused ({code}: {message})") from exc
                raise
        vector = payload.get("embeddingsByType", {}).get("float") or payload.get("embedding")
        if not isinstance(vector, list) or len(vector) != self.dimension:
            got = len(vector) if isinstance(vector, list) else type(vector).__name__
            raise ParityError(f"Titan returned {got} values, expected dimension {self.dimension} ({self.id})")
        array = np.asarray(vector, dtype=np.float32)
        norm = float(np.linalg.norm(array))
        if not np.isfinite(norm) or norm == 0.0:
            raise ParityError(f"Titan returned a zero or non-finite embedding ({self.id})")
        return array / norm  # re-normalise: float32 rounding, or a model that ignored normalize

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.vstack([self.embed_one(t) for t in texts]).astype(np.float32)
