"""Issue 31: tenant scope on every write and every statistic, on one shared `episodic serve` with two
tokens, over raw HTTP on 127.0.0.1, on both card stores (SQLite, S3 Vectors) and both history stores
(SQLite, DynamoDB + S3). Tenant A is the server's own tenant (its transcripts are on this machine);
tenant B knows A's session id and holds a write token.

- `review_episode` on A's session: the same error as an unknown id; A's card is unchanged.
- B's own card under A's session id (`record_episode`), edited to `verified`: B never gets A's
  transcript as evidence, and its notes are word for word those for an id nobody has.
- `link_work_item` on A's session: the same error as an unknown id; nothing is linked.
- `history_search`: A writing 40 sessions full of a rare word leaves B's ids, order and scores as they were.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from episodic.assembly import build_memory
from episodic.aws.dynamo_history import DynamoS3HistoryStore
from episodic.history.service import kept_history
from episodic.history.sqlite_store import SQLiteHistoryStore
from episodic.kernel.auth import WRITE, LocalTokenStore
from episodic.kernel.memory import Memory
from episodic.kernel.models import LOCAL_TENANT
from episodic.kernel.settings import load_settings
from episodic.mcp.http_server import BackgroundServer, build_endpoint
from kits.history_kit import record
from kits.mcp_testkit import post, rpc

from tests.adversarial.conftest import session_lines

A, B = LOCAL_TENANT, "tenant-b"
A_SESSION = "5a5a5a5a-1111-4111-8111-5a5a5a5a5a5a"
NOBODYS = "0b0b0b0b-2222-4222-8222-0b0b0b0b0b0b"
RARE = "flamingo"
CARD = {
    "problem": "pytest fails with an import error after the package folder was renamed",
    "steps": ["renamed the imports", "ran the tests"],
    "insight": "the old package name was still imported by the test setup",
    "tags": ["python"],
    **{name: [] for name in ("key_decisions", "dead_ends", "misleading_intuitions", "critical_checks")},
}


def _fixed_and_tested(session_id: str) -> str:
    """A transcript whose card may say `verified`: an edit, then the tests pass."""
    lines = [json.loads(line) for line in session_lines(session_id, CARD["problem"]).splitlines()]
    edit = {"type": "tool_use", "id": "e1", "name": "Edit"}
    edit["input"] = {
        "file_path": "/home/dev/shop/app.py",
        "old_string": "import old",
        "new_string": "import new",
    }
    lines[1]["message"]["content"].insert(1, edit)
    lines[2]["message"]["content"].insert(0, {"type": "tool_result", "tool_use_id": "e1", "content": "ok"})
    return "".join(json.dumps(line) + "\n" for line in lines)


def _s3vectors_store(stack: ExitStack, home: Path) -> Any:
    from episodic.aws.s3vectors_store import S3VectorsStore
    from fakes.s3vectors_fake import FakeS3VectorsClient, make_index

    fake = FakeS3VectorsClient()
    make_index(fake, "episodic-vectors", "episodes", 384)
    return S3VectorsStore(fake, "episodic-vectors", "episodes", sleep=lambda _s: None)


def _dynamodb_history(stack: ExitStack, home: Path) -> DynamoS3HistoryStore:
    import boto3
    from moto import mock_aws

    stack.enter_context(mock_aws())
    dynamodb, s3 = boto3.client("dynamodb", "us-east-1"), boto3.client("s3", "us-east-1")
    s3.create_bucket(Bucket="episodic-transcripts")
    dynamodb.create_table(
        TableName="episodic-history",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    return DynamoS3HistoryStore(dynamodb, s3, table="episodic-history", bucket="episodic-transcripts")


class Served:
    def __init__(self, url: str, tokens: dict[str, str], memory: Memory) -> None:
        self.url, self.tokens, self.memory = url, tokens, memory

    def call(self, tenant: str, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        status, _, body = post(
            self.url,
            rpc("tools/call", {"name": tool, "arguments": args}),
            {"Authorization": f"Bearer {self.tokens[tenant]}"},
        )
        assert status == 200, body
        return json.loads(body)["result"]  # type: ignore[no-any-return]


@pytest.fixture(params=["sqlite", "aws"])
def served(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Served]:
    """One server, A's transcript on its machine; the SQLite stores or S3 Vectors + DynamoDB/S3 history."""
    claude = tmp_path / "claude"
    project = claude / "projects" / "-home-dev-shop"
    project.mkdir(parents=True)
    (project / f"{A_SESSION}.jsonl").write_text(_fixed_and_tested(A_SESSION))
    home = tmp_path / "home"
    settings = load_settings(
        home=home, embedder="hashing", claude_config_dir=str(claude), user_home=str(tmp_path / "user")
    )
    with ExitStack() as stack:
        if request.param == "aws":
            memory = build_memory(
                settings,
                store=_s3vectors_store(stack, home),
                parts={"history": _dynamodb_history(stack, home)},
            )
        else:
            memory = build_memory(settings, parts={"history": SQLiteHistoryStore(home / "history.sqlite3")})
        tokens = LocalTokenStore(settings.tokens_path)
        keys = {tenant: tokens.add(tenant, WRITE) for tenant in (A, B)}
        server = stack.enter_context(BackgroundServer(build_endpoint(settings, memory)))
        yield Served(server.url, keys, memory)


def _same_words(texts: list[str], ids: list[str]) -> list[str]:
    return [text.replace(sid, "<id>") for text, sid in zip(texts, ids, strict=True)]


def test_review_of_another_tenants_session_is_an_unknown_id(served: Served) -> None:
    mine = served.call(A, "record_episode", {"session_id": A_SESSION, **CARD, "outcome": "verified"})
    assert mine["structuredContent"]["outcome"] == "verified", mine  # A's own transcript backs it
    before = served.memory.store.get(A, A_SESSION)
    answers = [
        served.call(B, "review_episode", {"session_id": sid, "action": action, "reason": "spam"})
        for sid in (A_SESSION, NOBODYS)
        for action in ("approve", "veto")
    ]
    assert all(a.get("isError") for a in answers), answers
    texts = [a["content"][0]["text"] for a in answers]
    assert _same_words(texts[:2], [A_SESSION] * 2) == _same_words(texts[2:], [NOBODYS] * 2)
    assert served.memory.store.get(A, A_SESSION) == before  # A's card: not approved, not vetoed


def test_own_card_under_another_tenants_id_never_reads_their_transcript(served: Served) -> None:
    served.call(A, "record_episode", {"session_id": A_SESSION, **CARD, "outcome": "verified"})
    notes = []
    for sid in (A_SESSION, NOBODYS):
        recorded = served.call(B, "record_episode", {"session_id": sid, **CARD, "outcome": "verified"})
        out = recorded["structuredContent"]
        assert (out["outcome"], out["transcript_found"]) == ("unverified", False), out
        edited = served.call(
            B,
            "review_episode",
            {"session_id": sid, "action": "edit", "card": {**CARD, "outcome": "verified"}},
        )
        assert edited["structuredContent"]["outcome"] == "unverified", edited  # A's passing tests: not B's
        notes.append((out["notes"], edited["structuredContent"]["notes"]))
    assert notes[0] == notes[1]  # nothing tells B that A's session exists or how it ended
    own = served.memory.store.get(A, A_SESSION)
    assert own is not None and own.card.outcome.value == "verified" and own.tenant_id == A


def test_linking_another_tenants_session_is_an_unknown_id(served: Served) -> None:
    history = kept_history(served.memory)
    assert history is not None
    history.put(record(A, A_SESSION, "2026-01-10", ["pytest import error"]))
    answers = [
        served.call(B, "link_work_item", {"session_id": sid, "item": "ENT-7"}) for sid in (A_SESSION, NOBODYS)
    ]
    assert all(a.get("isError") for a in answers), answers
    texts = [a["content"][0]["text"] for a in answers]
    assert _same_words(texts, [A_SESSION, NOBODYS])[0] == _same_words(texts, [A_SESSION, NOBODYS])[1]
    assert history.links(B) == [] and history.links(A) == []
    history.put(record(B, "b-own", "2026-01-11", ["b's own session"]))
    linked = served.call(B, "link_work_item", {"session_id": "b-own", "item": "ENT-7"})
    assert not linked.get("isError"), linked
    assert [link.session_id for link in history.links(B)] == ["b-own"]


def test_history_ranking_uses_the_callers_own_statistics(served: Served) -> None:
    history = kept_history(served.memory)
    assert history is not None
    b_prompts = [
        [f"the {RARE} deploy script times out on the staging cluster"],
        [f"{RARE} {RARE}: the staging cluster refuses the deploy token", "retry the deploy"],
        ["the deploy token expired on the staging cluster"],
        [f"renamed the {RARE} service; the staging cluster lost its deploy hook and the whole pipeline"],
        *([f"the database migration {n} needs a rollback plan"] for n in range(8)),  # the word stays rare
    ]
    for i, prompts in enumerate(b_prompts):
        history.put(record(B, f"b-{i}", f"2026-02-{i + 1:02d}", prompts, sha=f"{i:064d}"))

    def ranking(query: str) -> list[tuple[str, float]]:
        out = served.call(B, "history_search", {"topic": query})
        assert not out.get("isError"), out
        return [(s["session_id"], s["score"]) for s in out["structuredContent"]["results"]]

    queries = [RARE, f"{RARE} staging", "deploy token"]
    before = {q: ranking(q) for q in queries}
    assert [sid for sid, _ in before[RARE]] and all(score > 0 for _, score in before[RARE]), before
    for i in range(40):  # A: the rare word everywhere, and B's other words too
        prompts = [f"{RARE} {RARE} staging deploy token number {i}", f"{RARE} again"]
        history.put(record(A, f"a-{i}", "2026-03-01", prompts, sha=f"a{i:063d}"))
    assert {q: ranking(q) for q in queries} == before
