"""Shared helpers for AWS calls: error codes without importing botocore, and backoff on throttling."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Collection, Iterator
from typing import Any, TypeVar

from episodic.kernel.errors import THROTTLE_CODES, error_code, error_message

T = TypeVar("T")


class RetriesExhausted(Exception):
    """Every attempt was throttled; `last` is the final ClientError."""

    def __init__(self, last: BaseException, attempts: int) -> None:
        super().__init__(f"{error_code(last)} after {attempts} attempts: {error_message(last)}")
        self.last = last
        self.attempts = attempts


def with_backoff(
    call: Callable[[], T],
    *,
    retry_codes: Collection[str] = THROTTLE_CODES,
    attempts: int = 5,
    base_delay: float = 0.5,
    max_delay: float = 20.0,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """Run `call`, retrying retryable AWS errors with full-jitter exponential backoff."""
    for attempt in range(1, attempts + 1):
        try:
            return call()
        except Exception as exc:
            if error_code(exc) not in retry_codes:
                raise
            if attempt == attempts:
                raise RetriesExhausted(exc, attempts) from exc
            # full jitter keeps parallel Lambdas from retrying in lockstep
            sleep(random.uniform(0.5, 1.0) * min(max_delay, base_delay * 2 ** (attempt - 1)))
    raise AssertionError("unreachable")  # pragma: no cover


def retried_call(
    call: Callable[[], T],
    what: str,
    *,
    retry_codes: Collection[str],
    attempts: int,
    base_delay: float,
    sleep: Callable[[float], None],
) -> T:
    """`with_backoff`, with throttling that outlasts every attempt turned into a retry-next-run error."""
    from episodic.kernel.errors import RetryableDistillError

    try:
        return with_backoff(
            call, retry_codes=retry_codes, attempts=attempts, base_delay=base_delay, sleep=sleep
        )
    except RetriesExhausted as exc:
        raise RetryableDistillError(f"{what} throttled: {exc}") from exc


def read_body(body: Any) -> bytes:
    """InvokeModel returns a StreamingBody; tests may hand bytes."""
    return body.read() if hasattr(body, "read") else bytes(body)


def dynamo_pages(call: Callable[..., dict[str, Any]], **kwargs: Any) -> Iterator[dict[str, Any]]:
    """Every item of a DynamoDB Query or Scan (`call`: the client's method), page after page."""
    while True:
        page = call(**kwargs)
        yield from page.get("Items", [])
        if "LastEvaluatedKey" not in page:
            return
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
