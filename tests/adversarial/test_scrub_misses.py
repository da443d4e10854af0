"""Issue 14 item 8: secrets without a name beside them never reach what an LLM distiller receives
(`episodic inspect --render FILE`), and the ordinary-code table stays untouched (tests/unit/scrub/test_scrub.py)."""

from __future__ import annotations

import base64
import json
from pathlib import Path

from .conftest import cli

AWS_ID = "AKIAIOSFODNN7EXAMPLQ"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEZ"
QUERY_KEY = "4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a"
SIGNATURE = "3b1c5f0e2d4a6b8c9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d"
GITLAB = "glpat-Xy7Kp2Lm9Qr4St6Uv8Wz"
BLOB = base64.b64encode(f"GITLAB_TOKEN={GITLAB}".encode()).decode()
SPLIT_HEAD, SPLIT_TAIL = "wJalrXUtnFEMI/K7MDENG/bPxRfi", "9YkQ2vEXAM"

MESSAGES = [
    ("user", f"aws configure printed {AWS_ID} {AWS_SECRET} and then the upload to the bucket failed"),
    ("user", f"The geocoder call is https://maps.example.com/api?key={QUERY_KEY}&q=berlin and it 403s."),
    (
        "assistant",
        "The presigned link was https://b.s3.amazonaws.com/o.tar?X-Amz-Algorithm=AWS4-HMAC-SHA256"
        f"&X-Amz-Expires=300&X-Amz-Signature={SIGNATURE} and it expired.",
    ),
    ("user", f"the CI step runs echo {BLOB} | base64 -d > .env before the deploy job"),
    ("user", f"I pasted AWS_SECRET_ACCESS_KEY={SPLIT_HEAD}"),
    ("user", f"{SPLIT_TAIL} that was the rest of it, sorry, why does the upload still fail"),
]


def _transcript(path: Path) -> None:
    lines = []
    for i, (role, text) in enumerate(MESSAGES):
        content = text if role == "user" else [{"type": "text", "text": text}]
        lines.append(
            json.dumps(
                {
                    "type": role,
                    "sessionId": "33333333-3333-4333-8333-333333333333",
                    "uuid": f"m{i}",
                    "timestamp": f"2026-01-10T10:0{i}:00Z",
                    "message": {"role": role, "content": content},
                }
            )
        )
    path.write_text("\n".join(lines) + "\n")


def test_unlabelled_secrets_never_reach_the_distiller_prompt(tmp_path: Path) -> None:
    path = tmp_path / "33333333-3333-4333-8333-333333333333.jsonl"
    _transcript(path)
    rendered = cli(tmp_path / "home", "inspect", "--render", str(path))
    assert rendered.returncode == 0, rendered.stderr
    survey = rendered.stdout
    assert "upload to the bucket failed" in survey and "rest of it" in survey  # the prose stays
    for secret in (AWS_SECRET, QUERY_KEY, SIGNATURE, BLOB, GITLAB, SPLIT_HEAD, SPLIT_TAIL):
        assert secret not in survey, secret
    assert "?key=[REDACTED:secret]&q=berlin" in survey
    assert "X-Amz-Expires=300" in survey  # only the signature goes
