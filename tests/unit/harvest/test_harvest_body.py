"""Issue 31: the uploaded body gets the parser's session-wide pass over its scrubbed lines, so an AWS key id
split across two messages, and its secret in a later one, never reach the bucket."""

from __future__ import annotations

import json
from pathlib import Path

from episodic.harvest.body import build_body
from episodic.scrub import Scrubber
from kits.secret_kit import AWS_KEY_ID, AWS_SECRET_LOW


def _line(n: int, text: str) -> str:
    entry = {"type": "user", "uuid": f"u-{n}", "sessionId": "s", "message": {"role": "user", "content": text}}
    return json.dumps(entry)


def test_a_split_key_id_and_its_later_secret_are_not_uploaded(tmp_path: Path) -> None:
    texts = [
        f"the key id is {AWS_KEY_ID[:12]}",
        f"{AWS_KEY_ID[12:]} and that was all of it",
        f"The secret you pasted next, {AWS_SECRET_LOW}, must be rotated.",
    ]
    data = "\n".join(_line(n, t) for n, t in enumerate(texts)).encode()
    body = build_body([(tmp_path / "s.jsonl", data, False)], "sha", Scrubber())
    try:
        uploaded = body.file.read().decode()
    finally:
        body.close()
    for secret in (AWS_KEY_ID[12:], AWS_SECRET_LOW):
        assert secret not in uploaded, secret
    assert body.lines == 3 and body.secrets_redacted["aws-secret-key"] >= 1
    # ids and names are not prose: they never take a split secret's rest
    assert [json.loads(line)["uuid"] for line in uploaded.splitlines()] == ["u-0", "u-1", "u-2"]
