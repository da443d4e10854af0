"""Invariant 4 (secrets never leave): planted secrets of every kind inside real transcript lines, a
negative table of ordinary code that must come back unchanged, properties (idempotent, never raises),
and a run over every shared transcript.

Secrets are assembled from pieces at run time so that no secret scanner flags this file.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest
from episodic.kernel.errors import ConfigError
from episodic.kernel.settings import Settings
from episodic.scrub import KINDS, Scrubber, default_scrubber
from episodic.scrub.catalogue import catalogue_kinds
from episodic.scrub.noseyparker import noseyparker_kinds
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

B64 = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYq9mZ3kLx7p"  # 40 chars, AWS secret shape
ALNUM36 = "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
PEM_BODY = "MIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM9Oi\nZ1BjP5CE/Wm/Rr500Pqo8Xq1Vd+bA2c0K7yEUmDr\n"

# (kind, sentence holding the secret, the secret's distinctive core that must not survive)
PLANTED: list[tuple[str, str, str]] = [
    ("aws-access-key", "aws configure set aws_access_key_id AKIA" + "Q7XK2M4PZ9WB3N5R", "Q7XK2M4PZ9WB3N5R"),
    ("aws-access-key", "creds: ASIA" + "ZZ3XK2M4PZ9WB3N5", "ZZ3XK2M4PZ9WB3N5"),
    ("aws-secret-key", "AWS_SECRET_ACCESS_KEY=" + B64, B64[8:30]),
    ("aws-secret-key", '{"SecretAccessKey": "' + B64 + '"}', B64[8:30]),
    ("aws-secret-key", "aws_secret_access_key = " + B64, B64[8:30]),
    ("github-token", "git remote set-url origin https://github.com/a/b # ghp_" + ALNUM36, ALNUM36[4:30]),
    ("github-token", "GH_TOKEN=github_pat_11ABCDEFG0" + ALNUM36 + "_" + ALNUM36[:20], ALNUM36[4:30]),
    ("gitlab-token", "use glpat-" + "xY7zQ2wE9rT4uI8oP3aS", "xY7zQ2wE9rT4uI8oP3aS"),
    (
        "slack-token",
        "SLACK_BOT=xoxb-" + "2417856391-5938475629-aBcDeFgHiJkLmNoPqRsTuVwX",
        "aBcDeFgHiJkLmNoPqRsTuVwX",
    ),
    (
        "slack-token",
        "curl -X POST https://hooks.slack.com/services/T024BE7LD/B01ABCD2EFG/" + "xYz12AbC34dEf56GhI78jKl9",
        "xYz12AbC34dEf56GhI78jKl9",
    ),
    ("stripe-key", "stripe.api_key = 'sk_live_" + "51H8xYzAbC123dEfGhIjKlMn'", "51H8xYzAbC123dEfGhIjKlMn"),
    ("stripe-key", "restricted rk_live_" + "51H8xYzAbC123dEfGhIjKlMn", "51H8xYzAbC123dEfGhIjKlMn"),
    ("stripe-key", "test key sk_test_" + "4eC39HqLyjWDarjtT1zdp7dc", "4eC39HqLyjWDarjtT1zdp7dc"),
    ("openai-key", "OPENAI_API_KEY=sk-proj-" + "Ab3dEf6hIj" * 8 + "_Kq9", "Ab3dEf6hIjAb3dEf6hIj"),
    ("openai-key", "client = OpenAI(api_key='sk-" + "T3BlbkFJ" + ALNUM36 + "')", ALNUM36[4:30]),
    ("anthropic-key", "ANTHROPIC_API_KEY=sk-ant-api03-" + "Xy9_Zw8-" * 11 + "AA", "Xy9_Zw8-Xy9_Zw8-"),
    (
        "google-api-key",
        "maps?key=AIza" + "SyB3kQ9xZ7mP2wL5vN8rT4yH6jF1dC0aE9s",
        "SyB3kQ9xZ7mP2wL5vN8rT4yH6jF1dC0aE9s",
    ),
    ("npm-token", "//registry.npmjs.org/:_authToken=npm_" + ALNUM36, ALNUM36[4:30]),
    ("pypi-token", "password = pypi-AgEIcHlwaS5vcmc" + "CJDk2ZmQ3YTFhLTk" * 4, "CJDk2ZmQ3YTFhLTk"),
    (
        "huggingface-token",
        "HF_TOKEN=hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYzAbCdEfGh",
        "AbCdEfGhIjKlMnOpQrStUvWxYzAbCdEfGh",
    ),
    (
        "sendgrid-key",
        "SG." + "ngeVfQFYQlKU0ufo8x5d1A" + "." + "TwL2iGABf9DHoTf-09kqeF8tAmbihYzrnopKc-1s5cr",
        "TwL2iGABf9DHoTf",
    ),
    (
        "jwt",
        "cookie session=eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9."
        + "eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
        "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV",
    ),
    (
        "private-key",
        "-----BEGIN RSA PRIVATE KEY-----\n" + PEM_BODY + "-----END RSA PRIVATE KEY-----",
        "3Tz2mr7SZiAMfQ",
    ),
    (
        "private-key",
        "key:\n-----BEGIN OPENSSH PRIVATE KEY-----\n" + PEM_BODY + "-----END OPENSSH PRIVATE KEY-----\nok",
        "P5CE/Wm/Rr500",
    ),
    (
        "private-key",
        "-----BEGIN EC PRIVATE KEY-----\n" + PEM_BODY + "-----END EC PRIVATE KEY-----",
        "Pqo8Xq1Vd",
    ),
    ("private-key", "cat id_rsa\n-----BEGIN PRIVATE KEY-----\n" + PEM_BODY, "Pqo8Xq1Vd"),  # cut, no END
    # glued to a word (hypothesis found it after a token): a PEM header needs no boundary before it
    ("private-key", "key=abc8-----BEGIN RSA PRIVATE KEY-----\n" + PEM_BODY, "Pqo8Xq1Vd"),
    ("password", "DATABASE_URL=postgres://app:" + "Zq8-wX3pL2@db.internal:5432/app", "Zq8-wX3pL2"),
    ("password", "mongodb+srv://admin:" + "n7Kp2xQ9vR@cluster0.example.net/test", "n7Kp2xQ9vR"),
    ("password", "PGPASSWORD=" + "xK9#mP2$vL5nQ8wR3tY6 psql -h db", "xK9#mP2$vL5nQ8wR3tY6"),
    ("password", "DB_PASSWORD=" + "hunter22Q", "hunter22Q"),
    ("password", 'db.connect(host="x", password="' + 'S3cure!Pass")', "S3cure!Pass"),
    ("password", "curl -u admin:" + "Sup3rS3cr3t https://api.example.com", "Sup3rS3cr3t"),
    ("password", "Server=db;User Id=sa;Password=" + "Pa55w0rdX;", "Pa55w0rdX"),
    ("bearer-token", "Authorization: Bearer " + "4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c", "4f9a8b7c6d5e4f3a2b1c"),
    (
        "bearer-token",
        "curl -H 'Authorization: Bearer " + "ya29.a0AfH6SMBx3kL9pQ2rT7vW1yZ4' https://x",
        "a0AfH6SMBx3kL9pQ2rT7vW1yZ4",
    ),
    (
        "bearer-token",
        '{"headers": {"Authorization": "Bearer ' + 'q8W2e4R6t8Y0u2I4o6P8"}}',
        "q8W2e4R6t8Y0u2I4o6P8",
    ),
    ("basic-auth", "Authorization: Basic " + "YWRtaW46czNjcjN0UGFzcw==", "YWRtaW46czNjcjN0UGFzcw"),
    ("secret", "export CLIENT_SECRET=" + "a8f7d6c5b4a39281f0e1", "a8f7d6c5b4a39281f0e1"),
    ("secret", '{"api_key": "' + 'Zx81Qw72Er63Ty54"}', "Zx81Qw72Er63Ty54"),
    ("secret", "apiKey: '" + "k3Y9vB2nM8qW4eR7'", "k3Y9vB2nM8qW4eR7"),
    ("secret", "GITHUB_TOKEN=" + "7f3e9a1b2c4d6e8f0a1b", "7f3e9a1b2c4d6e8f0a1b"),
    ("secret", "mytool --token " + "Qm9vX2Zvb19iYXIxMjM0", "Qm9vX2Zvb19iYXIxMjM0"),
    ("secret", "https://api.example.com/v1?access_token=" + "e72a9f0c4b1d83a6&page=2", "e72a9f0c4b1d83a6"),
    # issue 14: no name beside the secret
    (
        "aws-secret-key",
        "AKIAIOSFODNN7EXAMPLQ," + "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEZ,us-east-1",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEZ",
    ),
    (
        "secret",
        "GET /maps/api?key=" + "4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a HTTP/1.1",
        "4f9a8b7c6d5e4f3a2b1c",
    ),
    (
        "secret",
        "o.tar?X-Amz-Expires=300&X-Amz-Signature=" + "3b1c5f0e2d4a6b8c9e0f1a2b3c4d5e6f",
        "3b1c5f0e2d4a",
    ),
    (
        "gitlab-token",
        "echo " + "R0lUTEFCX1RPS0VOPWdscGF0LVh5N0twMkxtOVFyNFN0NlV2OFd6" + " | base64 -d",
        "R0lUTEFCX1RPS0VO",
    ),
]

# Ordinary code and text that must come back exactly as it went in.
UNCHANGED: list[str] = [
    "commit 3f786850e387550fdab836ed7e6dc881de23001b (HEAD -> main)",
    '"integrity": "sha512-Gp7x0yTj7C3q2Q1bF8Vn3Zk6ObGf2RMcXo4JpkE9Dk8y2JYn1Zt0eH7qFQfWbKx9NnX3aR0+1t5pLqhYtYB2Yw=="',
    "image: python@sha256:4c3d2b1a0f9e8d7c6b5a49382716051a2b3c4d5e6f708192a3b4c5d6e7f80912",
    "golang.org/x/sys v0.15.0 h1:h48lPFYpsTvQJZF4EKyI4aLHaev3CxivZmv7yZig9pc=",
    "session 550e8400-e29b-41d4-a716-446655440000 started",
    '{"type":"tool_use","id":"toolu_01A09q90qw90lq917835lq9","name":"Bash"}',
    '"id":"msg_011xXrAdZnjuPTsj3PxR47br","requestId":"req_011CXpmoeUhDP9XVLK4KfTEU"',
    '"usage":{"input_tokens":9,"cache_creation_input_tokens":8004,"output_tokens":3}',
    "token_count=5 and max_tokens: 100",
    "password_reset_url=https://example.com/account/reset",
    "interface User { password: string; token?: string | null; apiKey: string }",
    "def get_token(self) -> str:\n    return self.token",
    'api_key = os.environ["OPENAI_API_KEY"]',
    "const token = await getToken(); const secret = process.env.SECRET_KEY;",
    'headers = {"Authorization": f"Bearer {token}"}',
    'curl -H "Authorization: Bearer $GITHUB_TOKEN" https://api.github.com/user',
    "Authorization: Bearer <token>",
    "postgres://user:password@localhost:5432/db and redis://localhost:6379/0",
    '"password": "<your-password>", "API_KEY": "your_api_key_here", "SECRET": "changeme"',
    "TOKEN=*** PASSWORD=${DB_PASSWORD} AWS_ACCESS_KEY_ID=testing",
    "secret_name: prod/db/credentials and token_path: /var/run/secrets/token",
    "tokenizer = AutoTokenizer.from_pretrained(model); author: Jane Doe",
    "password=None, token: Optional[str] = None, secret = get_secret(name)",
    '"signature":"ErwFCkYICxgCKkBaG9NFzWVKemYILa8WXl8xkeYlG4dNUyznJ87gL4Bj4WXVUQIQlkriG+1nhwjubUMbWzCkuefur"',
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==",
    "git checkout -b task-abc123def456ghi789jkl012mno and disk-usage-report-2024",
    "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----",
    "The token is invalid, the password is wrong, and the secret is out.",
    "the worker token was restarted. the session token is migration.",
    "Use a Bearer token in the Authorization header; basic auth also works.",
    "/Users/paul/src/entireio/cli/cmd/entire/cli/strategy/manual_commit_hooks_test.go:412",
    '"react": "^18.2.0", "@types/node": "20.11.5", "typescript": "~5.3.3"',
    "keyboard shortcuts: Key.ENTER, primary_key=True, sort_key: created_at, cache_key = f(x)",
    '\\"secret: \\"+highEntropySecret), 0o644)',
    "AWS_SESSION_TOKEN=AQoDYXdzEJr...<truncated>...EXAMPLETOKEN",
    "sorted(items, key=lambda item: item.created_2024_0117) and inspect.signature=sig_v2_1234567890abcdef",
    "https://example.com/search?key=value&sig=short and ?key=your-api-key-goes-here-please",
    "commit 3f786850e387550fdab836ed7e6dc881de23001b touched aws_access_key_id handling",
]


def _escape_json(text: str) -> str:
    return json.dumps(text)[1:-1]


@pytest.fixture(scope="module")
def scrubber() -> Scrubber:
    return Scrubber()


@pytest.mark.parametrize(
    ("kind", "sentence", "core"), PLANTED, ids=[f"{k}-{i}" for i, (k, _, _) in enumerate(PLANTED)]
)
def test_planted_secret_is_redacted_raw_and_escaped(
    scrubber: Scrubber, kind: str, sentence: str, core: str
) -> None:
    assert core in sentence
    for text in (sentence, _escape_json(sentence), _escape_json(_escape_json(sentence)), f"x\n{sentence}\ny"):
        clean, counts = scrubber.scrub_counted(text)
        assert core not in clean, text
        assert f"[REDACTED:{kind}]" in clean, clean
        assert counts.get(kind, 0) >= 1
        assert scrubber.scrub(clean) == clean
    assert scrubber.internal_errors == 0


def test_surrounding_text_is_kept(scrubber: Scrubber) -> None:
    assert scrubber.scrub("AWS_SECRET_ACCESS_KEY=" + B64) == "AWS_SECRET_ACCESS_KEY=[REDACTED:aws-secret-key]"
    assert (
        scrubber.scrub("postgres://user:" + "Zq8wX3pL2@host/db")
        == "postgres://user:[REDACTED:password]@host/db"
    )
    header = "Authorization: Bearer " + "4f9a8b7c6d5e4f3a2b1c0d9e"
    assert scrubber.scrub(header) == "Authorization: Bearer [REDACTED:bearer-token]"
    escaped = '{\\"Authorization\\": \\"Bearer ' + '4f9a8b7c6d5e4f3a2b1c0d9e\\"}'
    assert scrubber.scrub(escaped) == '{\\"Authorization\\": \\"Bearer [REDACTED:bearer-token]\\"}'


@pytest.mark.parametrize("text", UNCHANGED)
def test_ordinary_code_is_unchanged(scrubber: Scrubber, text: str) -> None:
    assert scrubber.scrub(text) == text
    assert scrubber.scrub(_escape_json(text)) == _escape_json(text)


def _sample_lines(transcripts_dir: Path, limit: int = 12) -> list[str]:
    """Real transcript lines with a user/assistant text or a tool result to plant into."""
    lines: list[str] = []
    for path in sorted(transcripts_dir.glob("*/*.jsonl"))[:6]:
        for raw in path.read_text(encoding="utf-8").splitlines():
            if '"type":"user"' in raw or '"type":"assistant"' in raw:
                lines.append(raw)
                if len(lines) % 2 == 0:
                    break
        if len(lines) >= limit:
            break
    return lines


def _plant(entry: dict, sentence: str) -> bool:
    """Add the sentence to the first string content of a message (text block or tool result)."""
    message = entry.get("message")
    if not isinstance(message, dict):
        return False
    content = message.get("content")
    if isinstance(content, str):
        message["content"] = content + "\n" + sentence
        return True
    if isinstance(content, list):
        for block in content:
            if isinstance(block, dict):
                for field in ("text", "content", "thinking"):
                    if isinstance(block.get(field), str):
                        block[field] = block[field] + "\n" + sentence
                        return True
    message["content"] = [{"type": "text", "text": sentence}]
    return True


@pytest.mark.transcripts
def test_planted_in_real_transcript_lines(scrubber: Scrubber, transcripts_dir: Path) -> None:
    lines = _sample_lines(transcripts_dir)
    assert lines
    for i, (kind, sentence, core) in enumerate(PLANTED):
        entry = json.loads(lines[i % len(lines)])
        assert _plant(entry, sentence)
        # as a tool output that is itself JSON (double-escaped in the raw line)
        entry.setdefault("toolUseResult", {})
        entry["toolUseResult"] = {"stdout": json.dumps({"log": sentence, "note": "ok"})}
        raw = json.dumps(entry)
        clean_raw = scrubber.scrub(raw)
        assert core not in clean_raw and _escape_json(core) not in clean_raw, kind
        assert f"[REDACTED:{kind}]" in clean_raw
        assert json.loads(clean_raw)  # scrubbing keeps a JSON line parseable
        clean_obj, counts = scrubber.scrub_obj_counted(json.loads(raw))
        dumped = json.dumps(clean_obj)
        assert core not in dumped and _escape_json(core) not in dumped, kind
        assert counts.get(kind, 0) >= 2, (kind, counts)
    assert scrubber.internal_errors == 0


def test_scrub_obj_uses_the_key_and_copies(scrubber: Scrubber) -> None:
    original = {
        "env": {"DB_PASSWORD": "hunter22Q", "API_KEY": "Zx81Qw72Er63Ty54", "HOME": "/home/me", "N": 5},
        "argv": ["deploy", "--key", "AKIA" + "Q7XK2M4PZ9WB3N5R"],
        "pair": ("ok", None),
        "max_tokens": 1000,
        "token_count": "123456789",
    }
    clean, counts = scrubber.scrub_obj_counted(original)
    assert clean["env"] == {
        "DB_PASSWORD": "[REDACTED:password]",
        "API_KEY": "[REDACTED:secret]",
        "HOME": "/home/me",
        "N": 5,
    }
    assert clean["argv"][2] == "[REDACTED:aws-access-key]"
    assert clean["pair"] == ("ok", None)
    assert clean["max_tokens"] == 1000 and clean["token_count"] == "123456789"
    assert counts == {"password": 1, "secret": 1, "aws-access-key": 1}
    assert original["env"]["DB_PASSWORD"] == "hunter22Q"  # a new object; the input is untouched
    assert scrubber.scrub_obj(clean) == clean


def test_custom_patterns(episodic_home: Path) -> None:
    scrubber = Scrubber([r"ACME-[0-9]{6}", r"corp_pin=(\d{4})"])
    text = "ticket ACME-123456 and corp_pin=4821 and ACME-12"
    clean, counts = scrubber.scrub_counted(text)
    assert clean == "ticket [REDACTED:custom] and corp_pin=[REDACTED:custom] and ACME-12"
    assert counts == {"custom": 2}
    assert scrubber.scrub(clean) == clean
    greedy = Scrubber([r"[A-Z]+"])  # would match the placeholder's own letters: placeholders are skipped
    once = greedy.scrub("abc SECRET def")
    assert once == "abc [REDACTED:custom] def" and greedy.scrub(once) == once
    configured = Scrubber.from_settings(Settings(scrub_patterns=["ACME-[0-9]{6}"]))
    assert configured.scrub("ACME-000111") == "[REDACTED:custom]"


@pytest.mark.parametrize("pattern", ["(unclosed", "a{2,1}", "x*"])
def test_invalid_custom_pattern_is_a_config_error(pattern: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(repr(pattern))):
        Scrubber([pattern])


def test_default_scrubber_is_shared_and_kinds_are_known() -> None:
    assert default_scrubber() is default_scrubber()
    placeholders = {kind for kind, _, _ in PLANTED}
    assert placeholders <= set(KINDS)
    # catalogues: test_scrub_catalogue, test_scrub_noseyparker; this project's token and issue 52's formats:
    # test_scrub_shapes
    generated = set(catalogue_kinds()) | set(noseyparker_kinds())
    shapes = {"episodic-token", "telegram-bot-token", "discord-bot-token", "firebase-fcm-key"}
    assert set(KINDS) - placeholders - generated == {"custom", *(shapes - generated)}


def test_fallback_finder_gives_the_same_result(scrubber: Scrubber) -> None:
    slow = Scrubber(accelerated=False)
    assert not slow.accelerated
    for text in [s for _, s, _ in PLANTED] + UNCHANGED:
        for variant in (text, _escape_json(text)):
            assert slow.scrub_counted(variant) == scrubber.scrub_counted(variant)


def test_never_raises_on_odd_input(scrubber: Scrubber) -> None:
    odd = [
        "",
        "\x00\x01\x02password=\x00",
        "a\ud800 token=Zx81Qw72Er63Ty54 \udfff",  # lone surrogates (from JSON \\ud800)
        "-----BEGIN PRIVATE KEY-----" + "A" * 100_000,
        "password=" + "x9" * 200_000,
        "://" * 50_000 + "a:b@",
        "token=" * 30_000,
        "é😀 AKIA" + "Q7XK2M4PZ9WB3N5R ü",
    ]
    for text in odd:
        clean = scrubber.scrub(text)
        assert isinstance(clean, str) and scrubber.scrub(clean) == clean
    assert "Zx81Qw72Er63Ty54" not in scrubber.scrub(odd[2])
    assert scrubber.scrub(odd[-1]) == "é😀 [REDACTED:aws-access-key] ü"
    assert scrubber.scrub(None) is None  # type: ignore[arg-type]
    assert scrubber.internal_errors == 0


_FRAGMENTS = [
    "password=", "PASSWORD: ", '"token": "', "\\\"", "\\n", "AKIA", "ghp_", "sk-", "sk_live_", "eyJ", "://",
    "user:", "@host", "Bearer ", "Authorization: ", "-----BEGIN RSA PRIVATE KEY-----", "-----END",
    "[REDACTED:secret]", "[REDACTED:", "Zx81Qw72Er63Ty54", "a8f7d6c5b4a39281", B64, ALNUM36, "curl -u ",
    " ", "\n", "'", '"', "=", ":", "\ud800", "é😀",
    "SK", "0123456789abcdef" * 2, "dapi", "hvs.", "dop_v1_", "AGE-SECRET-KEY-1", "\\n", "%2B", "?sig=", "ghp_",
]  # fmt: skip


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(st.sampled_from(_FRAGMENTS), st.text(max_size=12)), max_size=30).map("".join))
def test_scrub_is_idempotent_and_total(text: str) -> None:
    scrubber = default_scrubber()
    once = scrubber.scrub(text)
    assert scrubber.scrub(once) == once
    assert Scrubber(accelerated=False).scrub(text) == once
    assert scrubber.internal_errors == 0


@pytest.mark.transcripts
def test_every_shared_transcript(scrubber: Scrubber, transcripts_dir: Path) -> None:
    """No exception anywhere; redactions in these public files are few (they are near-certain false
    positives, except the planted gitleaks examples one session wrote, which must go)."""
    counts: Counter[str] = Counter()
    files = sorted(transcripts_dir.rglob("*.jsonl"))
    assert files
    for path in files:
        text = path.read_text(encoding="utf-8", errors="surrogateescape")
        clean, found = scrubber.scrub_counted(text)
        counts.update(found)
        if "PGPASSWORD=xK9#mP2$vL5nQ8wR3tY6" in text:
            assert "xK9#mP2$vL5nQ8wR3tY6" not in clean
    print(f"\nredactions over {len(files)} shared transcripts: {dict(sorted(counts.items()))}")
    assert scrubber.internal_errors == 0
    assert sum(counts.values()) <= 25, counts
