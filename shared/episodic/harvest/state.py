"""Files the harvester keeps in the episodic home: upload state, last-run summary, stack outputs.

- `harvest-state.json`: {"version": 1, "uploaded": {bucket: {key: source-sha256}}, "sources": {main path:
  {"sha256": …, "bucket": …, "key": …}}} — written after EACH successful upload (atomic replace), so an
  interrupted run resumes; a failed upload is never recorded.
- `logs/last-harvest.json`: the last run's summary (read by `episodic cron status`).
- `aws-outputs.json`: the stack outputs recorded by `setup` (`{"TranscriptsBucket": …, "McpEndpoint": …}`).
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from episodic.kernel.errors import ConfigError

STATE_FILE = "harvest-state.json"
OUTPUTS_FILE = "aws-outputs.json"
LAST_RUN_FILE = "last-harvest.json"
STATE_VERSION = 1


def atomic_write_text(path: Path, text: str) -> None:
    """Write to a temporary file beside `path`, fsync, then rename over it: readers never see half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


class HarvestState:
    """What was uploaded where, keyed by (bucket, object key) → source-sha256 of the last successful upload."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.uploaded: dict[str, dict[str, str]] = {}
        self.sources: dict[str, dict[str, str]] = {}

    @classmethod
    def load(cls, path: Path) -> HarvestState:
        state = cls(path)
        try:
            raw = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return state
        except OSError as exc:
            raise ConfigError(f"cannot read the harvest state {path}: {exc}") from exc
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ConfigError(
                f"the harvest state {path} is not valid JSON ({exc}); move it away to re-check every "
                "session against the bucket (nothing is uploaded twice: the object metadata is compared)"
            ) from exc
        if isinstance(data, dict):
            uploaded = data.get("uploaded")
            sources = data.get("sources")
            if isinstance(uploaded, dict):
                state.uploaded = {
                    str(b): {str(k): str(v) for k, v in keys.items()}
                    for b, keys in uploaded.items()
                    if isinstance(keys, dict)
                }
            if isinstance(sources, dict):
                state.sources = {str(p): dict(v) for p, v in sources.items() if isinstance(v, dict)}
        return state

    def sha_for(self, bucket: str, key: str) -> str | None:
        return self.uploaded.get(bucket, {}).get(key)

    def known_source(self, main_path: str, bucket: str) -> dict[str, str] | None:
        """The last upload recorded for this transcript file into this bucket (to skip parsing it again)."""
        entry = self.sources.get(main_path)
        if entry and entry.get("bucket") == bucket and entry.get("key") and entry.get("sha256"):
            return entry
        return None

    def known_skip(self, main_path: str, sha256: str) -> str | None:
        """Why this exact content was found not to be an episode before (so it is not parsed again)."""
        entry = self.sources.get(main_path)
        if entry and entry.get("sha256") == sha256 and entry.get("not_episode"):
            return entry["not_episode"]
        return None

    def record_skip(self, main_path: str, sha256: str, reason: str) -> None:
        self.sources[main_path] = {"sha256": sha256, "not_episode": reason}
        self.save()

    def record(self, bucket: str, key: str, sha256: str, main_path: str | None = None) -> None:
        """Remember a successful upload (or a match found in the bucket) and save at once."""
        self.uploaded.setdefault(bucket, {})[key] = sha256
        if main_path:
            self.sources[main_path] = {"sha256": sha256, "bucket": bucket, "key": key}
        self.save()

    def save(self) -> None:
        data = {"version": STATE_VERSION, "uploaded": self.uploaded, "sources": self.sources}
        atomic_write_text(self.path, json.dumps(data, indent=1, sort_keys=True))


def read_stack_outputs(home: Path) -> dict[str, Any]:
    """`<home>/aws-outputs.json` as written by `setup` (empty when absent)."""
    path = home / OUTPUTS_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, json.JSONDecodeError) as exc:
        raise ConfigError(f"cannot read the stack outputs {path}: {exc}") from exc
    return data if isinstance(data, dict) else {}


def record_stack_outputs(home: Path, cdk_outputs: Path) -> dict[str, Any]:
    """Keep the deployed stack's outputs (`cdk deploy --outputs-file F`) in `<home>/aws-outputs.json`."""
    try:
        data = json.loads(cdk_outputs.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ConfigError(f"cannot read the cdk outputs file {cdk_outputs}: {exc}") from exc
    stacks = (
        [v for v in data.values() if isinstance(v, dict) and "TranscriptsBucketName" in v]
        if isinstance(data, dict)
        else []
    )
    if len(stacks) != 1:
        raise ConfigError(f"{cdk_outputs} holds no single episodic stack (no TranscriptsBucketName output)")
    outputs = dict(stacks[0])
    outputs["TranscriptsBucket"] = outputs["TranscriptsBucketName"]
    if "EndpointUrl" in outputs:
        outputs["McpEndpoint"] = outputs["EndpointUrl"]
    atomic_write_text(home / OUTPUTS_FILE, json.dumps(outputs, indent=1, sort_keys=True))
    return outputs


def harvester_policy(outputs: dict[str, Any], tenant: str) -> str | None:
    """The ARN of the tenant's upload policy from the stack's HarvesterPolicyArns output (None: not deployed)."""
    raw = outputs.get("HarvesterPolicyArns")
    if not raw:
        return None
    try:
        policies = json.loads(raw) if isinstance(raw, str) else raw
    except json.JSONDecodeError as exc:
        raise ConfigError(f"the stack output HarvesterPolicyArns is not JSON: {exc}") from exc
    arn = policies.get(tenant) if isinstance(policies, dict) else None
    return str(arn) if arn else None


def resolve_bucket(explicit: str | None, configured: str | None, home: Path) -> str:
    """--bucket, else settings.transcripts_bucket, else the TranscriptsBucket stack output."""
    if explicit:
        return explicit
    if configured:
        return configured
    bucket = read_stack_outputs(home).get("TranscriptsBucket")
    if isinstance(bucket, str) and bucket:
        return bucket
    raise ConfigError(
        "no transcripts bucket: pass --bucket, set EPISODIC_TRANSCRIPTS_BUCKET, "
        f"or record the stack outputs in {home / OUTPUTS_FILE}"
    )


def write_last_run(log_dir: Path, summary: dict[str, Any]) -> Path:
    path = log_dir / LAST_RUN_FILE
    atomic_write_text(path, json.dumps(summary, indent=2, default=str))
    return path


def record_aborted_run(log_dir: Path, mode: str, reason: str) -> Path:
    """A run that stopped before harvesting anything (no credentials, no bucket) still leaves its summary."""
    now = datetime.now(UTC).isoformat(timespec="seconds")
    return write_last_run(
        log_dir,
        {
            "mode": mode,
            "aborted": reason,
            "found": 0,
            "uploaded": 0,
            "unchanged": 0,
            "skipped": {},
            "failed": [],
        }
        | {"started_at": now, "finished_at": now},
    )


def read_last_run(log_dir: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((log_dir / LAST_RUN_FILE).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    return data if isinstance(data, dict) else None
