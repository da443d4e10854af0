"""SecretsManagerAuthenticator against moto Secrets Manager."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from episodic.aws.secrets_auth import SecretsManagerAuthenticator, parse_token_secret
from episodic.kernel.auth import READ, WRITE, token_hash
from episodic.kernel.errors import AuthError, ConfigError
from fakes.secret_edit import hand_edit
from moto import mock_aws

SECRET = "episodic/tokens"


def secret_body(*entries: tuple[str, str, str]) -> str:
    return json.dumps(
        {"tokens": [{"sha256": token_hash(t), "tenant": tenant, "scope": s} for t, tenant, s in entries]}
    )


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture()
def client(episodic_home: Path) -> Iterator[Any]:
    with mock_aws():
        sm = boto3.client("secretsmanager", region_name="us-east-1")
        sm.create_secret(
            Name=SECRET, SecretString=secret_body(("tok-a", "acme", READ), ("tok-w", "acme", WRITE))
        )
        yield sm


def test_tokens_map_to_tenants_and_scopes(client: Any) -> None:
    auth = SecretsManagerAuthenticator(client, SECRET)
    reader = auth.authenticate("tok-a")
    assert reader.tenant_id == "acme" and reader.allows(READ) and not reader.allows(WRITE)
    assert auth.authenticate("tok-w").allows(WRITE)
    for bad in ("", None, "tok-b", "tok-a "):
        with pytest.raises(AuthError):
            auth.authenticate(bad)


def test_secret_is_cached_and_refreshed(client: Any) -> None:
    clock = Clock()
    calls = []
    real = client.get_secret_value

    def counting(**kwargs: Any) -> Any:
        calls.append(kwargs)
        return real(**kwargs)

    client.get_secret_value = counting
    auth = SecretsManagerAuthenticator(client, SECRET, cache_seconds=300, min_refresh_seconds=30, clock=clock)
    for _ in range(5):
        auth.authenticate("tok-a")
    assert len(calls) == 1
    # revoke tok-a, add tok-b
    client.put_secret_value(SecretId=SECRET, SecretString=secret_body(("tok-b", "beta", READ)))
    assert auth.authenticate("tok-a").tenant_id == "acme"  # still cached
    clock.now += 40  # an unknown token may force one early refresh
    assert auth.authenticate("tok-b").tenant_id == "beta"
    with pytest.raises(AuthError):
        auth.authenticate("tok-a")
    assert len(calls) == 2
    with pytest.raises(AuthError):  # unknown tokens cannot hammer the secret
        auth.authenticate("tok-zzz")
    assert len(calls) == 2
    clock.now += 300
    auth.authenticate("tok-b")
    assert len(calls) == 3


def test_secret_holds_hashes_only_and_is_validated() -> None:
    with pytest.raises(ConfigError, match="JSON"):
        parse_token_secret("not json")
    with pytest.raises(ConfigError, match="tokens"):
        parse_token_secret("{}")
    with pytest.raises(ConfigError, match="sha256"):
        parse_token_secret(json.dumps({"tokens": [{"token": "plain", "tenant": "a"}]}))
    with pytest.raises(ConfigError, match="scope"):
        parse_token_secret(json.dumps({"tokens": [{"sha256": "a" * 64, "tenant": "a", "scope": "admin"}]}))
    [(digest, principal)] = parse_token_secret(json.dumps({"tokens": [{"sha256": "A" * 64, "tenant": "t"}]}))
    assert digest == "a" * 64 and principal.allows(READ) and not principal.allows(WRITE)


def test_missing_secret_is_a_config_error(client: Any) -> None:
    with pytest.raises(ConfigError, match="cannot read token secret"):
        SecretsManagerAuthenticator(client, "nope").authenticate("tok-a")


# ---------------------------------------------------------------- a malformed secret, and the --aws writer


def test_a_malformed_secret_leaves_valid_tokens_working(client: Any) -> None:
    from episodic.aws.secrets_auth import SecretTokenStore

    store = SecretTokenStore(client, SECRET)
    token, _ = store.add("globex", READ)  # the last valid document holds tok-a and this token
    hand_edit(client, SECRET, '{"tokens": [{"sha256": "oops"}')  # a hand edit gone wrong
    clock = Clock()
    cold = SecretsManagerAuthenticator(client, SECRET, clock=clock)  # a new instance: nothing cached
    assert cold.authenticate("tok-a").tenant_id == "acme"
    assert cold.authenticate(token).tenant_id == "globex"
    with pytest.raises(AuthError):
        cold.authenticate("tok-unknown")

    warm = SecretsManagerAuthenticator(client, SECRET, clock=clock)
    hand_edit(client, SECRET, secret_body(("tok-a", "acme", READ)))
    assert warm.authenticate("tok-a").tenant_id == "acme"  # cached from a valid document
    hand_edit(client, SECRET, "not json")
    hand_edit(client, SECRET, "still not json")  # AWSPREVIOUS is broken too
    clock.now += 3600
    assert warm.authenticate("tok-a").tenant_id == "acme"  # the last good document it read


def test_a_malformed_secret_with_nothing_valid_to_fall_back_on_is_an_error_not_a_denial(client: Any) -> None:
    hand_edit(client, SECRET, "[]")
    hand_edit(client, SECRET, "{}")
    with pytest.raises(ConfigError, match="no 'tokens' list"):
        SecretsManagerAuthenticator(client, SECRET).authenticate("tok-a")


def test_token_add_list_revoke_on_the_secret_keep_hashes_only_and_take_effect(client: Any) -> None:
    from episodic.aws.secrets_auth import SecretTokenStore

    store = SecretTokenStore(client, SECRET)
    token, info = store.add("globex", WRITE)
    # by stage: moto's stage-less read follows the last put, not AWSCURRENT as Secrets Manager does
    raw = client.get_secret_value(SecretId=SECRET, VersionStage="AWSCURRENT")["SecretString"]
    assert token not in raw and token_hash(token) in raw  # the token itself is never stored
    assert info.tenant_id == "globex" and token.startswith(info.prefix)
    assert {t.tenant_id for t in store.list()} == {"acme", "globex"}  # hand-made entries are kept
    auth = SecretsManagerAuthenticator(client, SECRET, cache_seconds=0, min_refresh_seconds=0)
    assert auth.authenticate(token).allows(WRITE)

    assert store.revoke(info.token_id).tenant_id == "globex"
    with pytest.raises(AuthError):
        auth.authenticate(token)
    stages = client.list_secret_version_ids(SecretId=SECRET)["Versions"]
    assert sorted(s for v in stages for s in v["VersionStages"]) == ["AWSCURRENT", "AWSPREVIOUS"]
    with pytest.raises(Exception, match="no token with id"):
        store.revoke(info.token_id)


def test_a_concurrent_write_is_recomputed_not_lost(client: Any) -> None:
    from episodic.aws.secrets_auth import SecretTokenStore

    store = SecretTokenStore(client, SECRET)
    other = SecretTokenStore(boto3.client("secretsmanager", region_name="us-east-1"), SECRET)
    real_put = client.put_secret_value
    raced: list[str] = []

    def put_then_race(**kwargs: Any) -> Any:
        result = real_put(**kwargs)
        if not raced:  # another operator's add lands between our read and our stage move
            raced.append(other.add("initech", READ)[0])
        return result

    client.put_secret_value = put_then_race
    try:
        token, _ = store.add("globex", READ)
    finally:
        client.put_secret_value = real_put
    assert {t.tenant_id for t in store.list()} == {"acme", "globex", "initech"}
    auth = SecretsManagerAuthenticator(client, SECRET, cache_seconds=0, min_refresh_seconds=0)
    assert (
        auth.authenticate(token).tenant_id == "globex" and auth.authenticate(raced[0]).tenant_id == "initech"
    )


def test_the_writer_refuses_to_edit_a_malformed_secret_and_writes_nothing(client: Any) -> None:
    from episodic.aws.secrets_auth import SecretTokenStore

    hand_edit(client, SECRET, '{"tokens": 3}')
    before = client.list_secret_version_ids(SecretId=SECRET)["Versions"]
    with pytest.raises(ConfigError, match="AWSCURRENT"):
        SecretTokenStore(client, SECRET).add("globex", READ)
    assert len(client.list_secret_version_ids(SecretId=SECRET)["Versions"]) == len(before)
