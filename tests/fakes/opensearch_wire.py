"""The real opensearch-py client, SigV4 signer included, talking to `FakeOpenSearch` over a recorded wire:
a urllib3 pool stand-in receives exactly the HTTP requests the client would send (method, path, query,
headers, body bytes), records them, and routes them to the fake's REST surface. No socket is opened."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit

from opensearchpy import Urllib3HttpConnection
from opensearchpy.exceptions import TransportError
from urllib3 import HTTPHeaderDict

from .opensearch_fake import FakeOpenSearch


@dataclass
class WireRequest:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body) if self.body else None

    def ndjson(self) -> list[Any]:
        return [json.loads(line) for line in self.body.decode().splitlines() if line.strip()]


class _Response:
    def __init__(self, status: int, payload: Any) -> None:
        self.status = status
        self.data = b"" if payload is None else json.dumps(payload).encode()
        self.headers = HTTPHeaderDict({"content-type": "application/json"})


class _Pool:
    def __init__(self, fake: FakeOpenSearch, log: list[WireRequest]) -> None:
        self.fake, self.log = fake, log

    def urlopen(self, method: str, url: str, body: bytes | None, **kwargs: Any) -> _Response:
        parts = urlsplit(url)
        headers = {k.lower(): v for k, v in (kwargs.get("headers") or {}).items()}
        self.log.append(WireRequest(method, parts.path, parse_qs(parts.query), headers, body or b""))
        try:
            return _Response(*self.route(method, parts.path, self.log[-1]))
        except TransportError as exc:
            return _Response(int(exc.status_code), exc.info)

    def route(self, method: str, path: str, request: WireRequest) -> tuple[int, Any]:
        segments = [s for s in path.split("/") if s]
        if segments == ["_bulk"]:
            return 200, self.fake.bulk(request.ndjson())
        if segments == ["_msearch"]:
            return 200, self.fake.msearch(request.ndjson())
        index = segments[0]
        if len(segments) == 1 and method == "HEAD":
            return (200 if index in self.fake.indexes else 404), None
        if len(segments) == 1 and method == "PUT":
            return 200, self.fake.indices.create(index, request.json())
        if segments[1:] == ["_mapping"]:
            return 200, self.fake.indices.get_mapping(index)
        if segments[1:] == ["_search"]:
            return 200, self.fake.search(index, request.json())
        if segments[1:] == ["_count"]:
            return 200, self.fake.count(index, request.json())
        return 405, {"error": f"the fake has no route for {method} {path}"}

    def close(self) -> None:
        pass


def recording_connection(fake: FakeOpenSearch, log: list[WireRequest]) -> type[Urllib3HttpConnection]:
    class RecordingConnection(Urllib3HttpConnection):
        def _create_urllib3_pool(self) -> None:
            self.pool = _Pool(fake, log)  # type: ignore[assignment]

    return RecordingConnection
