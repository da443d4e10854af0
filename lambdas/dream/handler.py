"""Dream Lambda: the weekly scheduled run (EventBridge Scheduler). Event {"tenants": [...]} (optional: all
tenants with transcripts) -> `episodic.dream.service.dream_tenants` -> per tenant and week, the phase counts.
A failed phase fails the invocation (the error names the tenant, week, phase and reason)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aws_lambda_powertools import Logger, Tracer
from aws_lambda_powertools.utilities.typing import LambdaContext
from episodic.assembly import build_memory
from episodic.assembly.dream import dream_adapters
from episodic.aws.clients import AwsClients
from episodic.dream.service import DreamRunError, dream_tenants
from episodic.kernel.memory import Memory
from episodic.kernel.settings import Settings, load_deployed_settings

logger = Logger()
tracer = Tracer()


@dataclass
class DreamRuntime:
    settings: Settings
    clients: AwsClients
    memory: Memory


_runtime: DreamRuntime | None = None


def runtime() -> DreamRuntime:
    global _runtime
    if _runtime is None:
        settings = load_deployed_settings()  # a missing variable fails the cold start, by name
        clients = AwsClients(settings)
        _runtime = DreamRuntime(settings, clients, build_memory(settings, clients=clients))
    return _runtime


def set_runtime(value: DreamRuntime | None) -> None:
    global _runtime
    _runtime = value


@logger.inject_lambda_context
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    tenants = event.get("tenants") if isinstance(event, dict) else None
    current = runtime()
    try:
        summary = dream_tenants(
            current.settings,
            [str(t) for t in tenants] if isinstance(tenants, list) else None,
            dream_adapters(current.settings, current.memory, current.clients),
        )
    except DreamRunError as exc:
        logger.error("dream failed", extra={"reason": str(exc), "summary": exc.summary})
        raise
    logger.info("dream done", extra={"summary": summary})
    return {"tenants": summary}
