"""SecretsManagerAuthenticator against moto Secrets Manager."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from episodic.auth import READ, WRITE, token_hash
from episodic.aws.secrets_auth import SecretsManagerAuthenticator, parse_token_secret
from episodic.errors import AuthError, ConfigError
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
