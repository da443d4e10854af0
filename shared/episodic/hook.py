"""The prompt hook (Claude Code's and Codex CLI's `UserPromptSubmit`, Gemini CLI's `BeforeAgent`): inject up to
3 verified past episodes similar to the prompt. The three CLIs send `prompt`, `session_id`, `cwd` and
`hook_event_name` and take the same answer, `hookSpecificOutput.additionalContext` (docs/wiring.md).

Never blocks: every failure path (server down or slow, bad stdin, bad answer, missing config, nothing
similar) exits 0 within the budget, prints nothing and appends one line to <home>/logs/hook.log.
Stdlib only (plus the stdlib-only `episodic.envsource`, `episodic.bounded`, `episodic.marker` and
`episodic.autostart`): it runs on every prompt. One deadline (process start + budget) bounds stdin, connect,
send, read and output. No local server answering: it starts one in the background (fail open).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from collections.abc import Callable
from typing import Any, TextIO, TypeVar

from episodic import bounded, envsource
from episodic.marker import escape_markers, wrap_injected

STARTED = time.monotonic()  # moved back to the process's own start by entry(): the budget is wall time
EXIT_MARGIN_SECONDS = 0.05  # logging and exit after the deadline
MAX_STARTUP_SECONDS = 0.5
MAX_STDIN_BYTES = 4_000_000
PROTOCOL_VERSION = "2025-11-25"
MIN_PROMPT_CHARS = 20
MIN_PROMPT_WORDS = 4
MAX_QUERY_CHARS = 1500
MAX_CARDS = 3
Answer = TypeVar("Answer")  # what one hook's request returns (retry_started, retry_moved)
MAX_CARD_CHARS = 1400  # one episode stays well under 1,500 characters even when it is the only one
DEFAULT_BUDGET_SECONDS = 1.5
DEFAULT_MAX_CHARS = 4000
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
LOG_MAX_BYTES = 1_000_000
LOG_LINE_CHARS = 600  # a moved port names the program, the new port and the config file
MAX_RESPONSE_BYTES = 2_000_000
HEADER = (
    "Episodic memory: past sessions that closely match this prompt and ended with a verified fix. "
    "They come from other sessions and were not checked against the current code."
)
MAX_POINTERS = 2  # unasked, a pointer is a hint: two at most (issue 38)
# stdlib copies of episodic.present's WEAK_HEADER / POINTER_CHARS / first_sentence (a test pins them)
WEAK_HEADER = "Possibly related past sessions (get_episode ID gives the card):"
POINTER_CHARS = 120
POINTER_ID_CHARS = 8
_SENTENCE_END = (". ", "? ", "! ", "\n")


class HookSkip(Exception):
    """A reason to print nothing (logged as one line)."""


class ServerDown(HookSkip):
    """Nothing listens at the endpoint (connection refused)."""


class ForeignServer(HookSkip):
    """Another program answers at the local endpoint (its answer lacks this home's identity header)."""


def _log(outcome: str, event: str = "user-prompt-submit", started: float | None = None) -> None:
    """One line in <home>/logs/hook.log: time, the hook's event, what happened, how long it took."""
    try:
        log_dir = envsource.home_dir() / "logs"
        log_dir.mkdir(parents=True, exist_ok=True)
        path = log_dir / "hook.log"
        if path.exists() and path.stat().st_size > LOG_MAX_BYTES:
            os.replace(path, log_dir / "hook.log.1")
        elapsed_ms = (time.monotonic() - (STARTED if started is None else started)) * 1000
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        line = f"{stamp} {event} {outcome.replace(chr(10), ' ')[:LOG_LINE_CHARS]} ({elapsed_ms:.0f} ms)\n"
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(line)
    except Exception:  # logging must never make the hook fail
        pass


_CONFIG: dict[str, Any] = {}


def setting(name: str, default: Any = None) -> Any:
    """env (EPISODIC_*) over the config file over the default (`envsource`, the order of `Settings`), read
    once; the defaults here mirror `Settings`' (a test pins them)."""
    if not _CONFIG:
        _CONFIG.update(envsource.light_values())
        _CONFIG.setdefault("\0loaded", True)
    return envsource.resolve(_CONFIG, name, default)


def _number(name: str, default: float) -> float:
    try:
        value = float(setting(name, default))
    except Exception:  # a bad value, or no home folder to find the config file in: the default
        return default
    return value if value > 0 else default


def _process_age() -> float:
    """Seconds since this process started (interpreter start-up counts against the budget)."""
    try:
        with open("/proc/self/stat", "rb") as handle:
            fields = handle.read().rsplit(b")", 1)[1].split()
        with open("/proc/uptime", "rb") as handle:
            uptime = float(handle.read().split()[0])
        age = uptime - int(fields[19]) / os.sysconf("SC_CLK_TCK")  # field 22: starttime in ticks
    except Exception:  # not Linux: a typical start-up
        age = 0.08
    return min(max(age, 0.0), MAX_STARTUP_SECONDS)


def deadline() -> float:
    """The one monotonic deadline for everything: stdin, connect, send, read, formatting."""
    return STARTED + _number("hook_budget_seconds", DEFAULT_BUDGET_SECONDS) - EXIT_MARGIN_SECONDS


def _read_stdin(stdin: TextIO) -> str:
    raw = getattr(stdin, "buffer", None)
    if raw is None:
        return stdin.read(MAX_STDIN_BYTES)
    # bytes, decoded leniently: invalid UTF-8 in a prompt must not lose the whole prompt
    return bounded.clean_text(raw.read(MAX_STDIN_BYTES).decode("utf-8", "replace"))


def read_payload(stdin: TextIO) -> dict[str, Any]:
    try:
        payload = bounded.loads(_read_stdin(stdin) or "null", max_bytes=MAX_STDIN_BYTES)
    except (ValueError, UnicodeDecodeError) as exc:
        raise HookSkip(f"skip: bad stdin ({type(exc).__name__})") from exc
    return payload if isinstance(payload, dict) else {}


def read_prompt(stdin: TextIO) -> str:
    return prompt_of(read_payload(stdin))


def prompt_of(payload: dict[str, Any]) -> str:
    prompt = payload.get("prompt")
    if not isinstance(prompt, str):
        raise HookSkip("skip: bad stdin (no prompt string)")
    prompt = bounded.clean_text(prompt).strip()  # a `\ud800` escape: the server refuses lone surrogates
    if prompt.startswith("/"):
        raise HookSkip("skip: slash command")
    if len(prompt) < MIN_PROMPT_CHARS or len(prompt.split()) < MIN_PROMPT_WORDS:
        raise HookSkip("skip: short prompt")
    return prompt


def endpoint() -> tuple[str, str]:
    broken = setting(envsource.CONFIG_ERROR)
    if broken:  # `episodic serve` refuses the same file: say which line, not "no token"
        raise HookSkip(f"fail: {broken}; fix that line (the hook and the server read their settings there)")
    url = setting("url")
    if not url:
        url = f"http://{setting('host', DEFAULT_HOST)}:{setting('port', DEFAULT_PORT)}/mcp"
    token = setting("token")
    if not token:
        raise HookSkip("skip: missing config (no token: set EPISODIC_TOKEN or `token` in the config file)")
    return str(url), str(token)


PROXY_VARS = ("https_proxy", "http_proxy", "all_proxy", "HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY")
LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")


def _dechunk(body: bytes) -> bytes:
    out: list[bytes] = []
    rest = body
    while True:
        size_line, _, rest = rest.partition(b"\r\n")
        size = int(size_line.split(b";")[0].strip() or b"0", 16)
        if size == 0:
            return b"".join(out)
        out.append(rest[:size])
        rest = rest[size + 2 :]


def _post_plain(
    host: str, port: int, path: str, payload: bytes, headers: dict[str, str], timeout: float
) -> tuple[int, bytes, dict[str, str]]:
    """HTTP/1.1 POST over a socket (Connection: close): the response is read to EOF; (status, body,
    headers by lower-case name)."""
    import socket

    lines = [
        f"POST {path} HTTP/1.1",
        f"Host: {host}:{port}",
        f"Content-Length: {len(payload)}",
        "Connection: close",
    ]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    if any("\r" in line or "\n" in line for line in lines):
        raise ValueError("header values must not contain line breaks")
    request = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + payload
    chunks: list[bytes] = []
    received = 0
    ends = time.monotonic() + timeout

    def left() -> float:  # every socket step gets only what is left of the one deadline
        remaining = ends - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("hook deadline")
        return remaining

    with socket.create_connection((host, port), timeout=left()) as sock:
        sock.settimeout(left())
        sock.sendall(request)
        while True:
            sock.settimeout(left())
            data = sock.recv(65536)
            if not data:
                break
            chunks.append(data)
            received += len(data)
            if received > MAX_RESPONSE_BYTES:
                raise HookSkip("fail: bad response (too large)")
    head, separator, body = b"".join(chunks).partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    parts = status_line.split()
    if not separator or len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
        raise HookSkip("fail: bad response (not HTTP)")
    named = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in header_lines)}
    if named.get("transfer-encoding", "").lower() == "chunked":
        try:
            body = _dechunk(body)
        except ValueError as exc:
            raise HookSkip("fail: bad response (broken chunked encoding)") from exc
    return int(parts[1]), body, named


def _foreign(host: str, port: int, status: int | None, named: dict[str, str]) -> ForeignServer | None:
    """The local answer came from another program, not this home's `episodic serve` (None when it is ours)."""
    from episodic.autostart import IDENTITY_HEADER, home_identity

    if named.get(IDENTITY_HEADER.lower()) == home_identity(envsource.home_dir()):
        return None
    what = f"HTTP {status}" if status is not None else "not HTTP"
    server = f", Server: {named['server'][:60]}" if named.get("server") else ""
    other = "another home's episodic server" if named.get(IDENTITY_HEADER.lower()) else "another program"
    return ForeignServer(f"fail: {other} answers at {host}:{port} ({what}{server}), not this home's server")


def _post(url: str, payload: bytes, headers: dict[str, str], timeout: float) -> bytes:
    """POST and return the body; HookSkip on any transport failure or non-2xx status."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    host = parts.hostname or ""
    proxied = host not in LOCAL_HOSTS and any(envsource.environ().get(v) for v in PROXY_VARS)
    try:
        if proxied:  # honour the user's proxy settings (and no_proxy) the standard way
            import urllib.error
            import urllib.request

            request = urllib.request.Request(url, data=payload, method="POST", headers=headers)
            try:
                with urllib.request.urlopen(request, timeout=timeout) as response:
                    return bytes(response.read(MAX_RESPONSE_BYTES))
            except urllib.error.HTTPError as exc:
                raise HookSkip(f"fail: server answered HTTP {exc.code}") from exc
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        if parts.scheme == "http":  # the local default: a plain socket, no http.client/ssl/email imports
            try:
                status, body, named = _post_plain(host, parts.port or 80, path, payload, headers, timeout)
            except HookSkip as skip:
                if "not HTTP" in str(skip) and host in LOCAL_HOSTS:  # garbage from a local port: not ours
                    raise _foreign(host, parts.port or 80, None, {}) or skip from skip
                raise
            if not 200 <= status < 300 and host in LOCAL_HOSTS:
                foreign = _foreign(host, parts.port or 80, status, named)
                if foreign is not None:
                    raise foreign
        else:
            import http.client

            conn = http.client.HTTPSConnection(host, parts.port, timeout=timeout)
            try:
                conn.request("POST", path, body=payload, headers=headers)
                response = conn.getresponse()
                status, body = response.status, response.read(MAX_RESPONSE_BYTES)
            finally:
                conn.close()
        if not 200 <= status < 300:
            raise HookSkip(f"fail: server answered HTTP {status}")
        return body
    except HookSkip:
        raise
    except (OSError, ValueError) as exc:  # refused, DNS, TLS, timeouts (URLError is an OSError)
        reason = getattr(exc, "reason", exc)
        if isinstance(reason, TimeoutError):
            raise HookSkip(f"fail: server timed out after {timeout:.2f} s") from exc
        if isinstance(reason, ConnectionRefusedError):
            raise ServerDown(f"fail: server unreachable ({type(reason).__name__}: {reason})") from exc
        raise HookSkip(f"fail: server unreachable ({type(reason).__name__}: {reason})") from exc
    except Exception as exc:  # http.client.HTTPException and friends: a broken answer
        raise HookSkip(f"fail: bad response ({type(exc).__name__})") from exc


def review_required() -> bool:
    return str(setting("review_required", "false")).lower() in ("true", "1", "yes", "on")


def search_arguments(query: str, approved_only: bool) -> dict[str, Any]:
    """The search_traces arguments of the hook (the evaluation's injection view asks the same)."""
    arguments: dict[str, Any] = {
        "query": query,
        "k": MAX_CARDS,
        "include_unverified": False,
        "include_weak": True,
    }
    if approved_only:  # `review_required`: only cards a person approved are injected
        arguments["approved_only"] = True
    return arguments


def select_hits(results: list[Any], approved_only: bool) -> list[dict[str, Any]]:
    """What the hook injects of search_traces' results: verified (and approved) strong or weak ones; a full
    card only for the best hit when it is strong (a second strong card was the wrong one too often: README
    "Injection"), the rest as at most MAX_POINTERS pointers; faint ones never (the agent can ask)."""
    verified = [
        r
        for r in results
        if isinstance(r, dict)
        and (r.get("card") or {}).get("outcome") == "verified"
        and r.get("confidence") in ("strong", "weak", None)
    ]
    if approved_only:
        verified = [r for r in verified if r.get("review") == "approved"]
    if not verified:
        return []
    best, rest = verified[0], verified[1:]
    pointers = [{**r, "confidence": "weak"} if is_strong(r) else r for r in rest]
    return [best, *pointers[:MAX_POINTERS]]


def ask_server(url: str, token: str, query: str, timeout: float) -> list[dict[str, Any]]:
    """One stateless tools/call (no initialize needed); the verified results, best first."""
    approved_only = review_required()
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "search_traces", "arguments": search_arguments(query, approved_only)},
    }
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": PROTOCOL_VERSION,
        "Authorization": f"Bearer {token}",
    }
    raw = _post(url, json.dumps(body).encode("utf-8"), headers, timeout)
    try:
        answer = json.loads(raw)
        result = answer["result"]
        if result.get("isError"):
            raise HookSkip("fail: tool error: " + str(result.get("content", [{}])[0].get("text", ""))[:200])
        results = result["structuredContent"]["results"]
        if not isinstance(results, list):
            raise TypeError("results is not a list")
    except HookSkip:
        raise
    except (ValueError, KeyError, TypeError, AttributeError, IndexError) as exc:
        raise HookSkip(f"fail: bad response ({type(exc).__name__})") from exc
    return select_hits(results, approved_only)


# stdlib copies of episodic.present.cut / fit_lines (the hook imports nothing of the core; a test pins them)
def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(limit - 1, 0)].rstrip() + "…"


def _fit_lines(lines: list[str], budget: int, min_room: int) -> list[str]:
    out: list[str] = []
    for line in lines:
        remaining = budget - sum(len(x) + 1 for x in out)
        if remaining <= min_room:
            break
        out.append(_cut(line, remaining - 1))
    return out


def is_strong(hit: dict[str, Any]) -> bool:
    """A full card only for a confident match; a hit without a confidence (an older server) is weak."""
    return hit.get("confidence") == "strong"


def _first_sentence(text: str, limit: int = POINTER_CHARS) -> str:
    """Stdlib copy of episodic.present.first_sentence (a test pins them)."""
    text = text.strip()
    ends = [i for i in (text.find(mark) for mark in _SENTENCE_END) if i > 0]
    sentence = " ".join(text[: min(ends) + 1].split()) if ends else " ".join(text.split())
    if len(sentence) <= limit:
        return sentence
    room = sentence[: max(limit - 1, 0)]
    word = room.rsplit(" ", 1)[0] if " " in room[limit // 2 :] else room
    return word.rstrip(" ,;:-") + "…"


def pointer_line(hit: dict[str, Any]) -> str:
    """Stdlib copy of episodic.present.pointer_line over a search result (a test pins them)."""
    problem = _first_sentence(str((hit.get("card") or {}).get("problem") or ""))
    return f"- {hit.get('date') or 'undated'} {str(hit.get('session_id', '?'))[:POINTER_ID_CHARS]} {problem}"


# How a card's fields are introduced: an offline (heuristic) card is the session's own sentences, said as such
EXTRACT_TITLES = {
    "problem": "Its problem, as the session put it",
    "dead_ends": "The session said did not work",
    "misleading_intuitions": "The session suspected",
    "critical_checks": "Checks it ran",
}
LESSON_TITLES = {
    "problem": "Its problem was",
    "dead_ends": "Dead ends there",
    "misleading_intuitions": "What looked guilty but was not",
    "critical_checks": "Checks that mattered",
}


def is_extract(hit: dict[str, Any]) -> bool:
    """Stdlib copy of episodic.present.is_extract over a search result (a test pins them)."""
    return str(hit.get("distiller") or "").split(":", 1)[0] == "heuristic"


def episode_titles(hit: dict[str, Any]) -> dict[str, str]:
    return EXTRACT_TITLES if is_extract(hit) else LESSON_TITLES


def episode_lead(hit: dict[str, Any], where: str) -> str:
    """The first line: what the past session concluded, in its own words for an offline card."""
    insight = (hit.get("card") or {}).get("insight") or ""
    match = f"A close past match{f' ({where})' if where else ''}"
    if is_extract(hit):
        return (
            f"{match}. The session concluded: {insight}"
            if insight
            else f"{match}, in the session's own words."
        )
    return f"{match} found: {insight or 'a verified fix'}"


def format_episode(hit: dict[str, Any], max_chars: int) -> str:
    card = hit.get("card") or {}
    where = ", ".join(
        x
        for x in (
            str(hit.get("date") or ""),
            f"project {hit['project']}" if hit.get("project") else "",
            f"similarity {hit['similarity']:.2f}" if isinstance(hit.get("similarity"), int | float) else "",
        )
        if x
    )
    titles = episode_titles(hit)
    lines = [episode_lead(hit, where), f"{titles['problem']}: {card.get('problem', '')}"]
    for title, key in (
        (titles["dead_ends"], "dead_ends"),
        (titles["misleading_intuitions"], "misleading_intuitions"),
        (titles["critical_checks"], "critical_checks"),
    ):
        items = [str(i) for i in card.get(key) or []]
        if items:
            lines.append(f"{title}: " + " | ".join(items))
    reference = _cut(
        f"(session {hit.get('session_id', '?')}; the full card is available from get_episode)", 120
    )
    budget = max_chars - len(reference) - 1  # the reference line always fits
    return "\n".join([*_fit_lines(lines, budget, 40), reference])


def build_context(hits: list[dict[str, Any]], max_chars: int, scratch: str = "") -> str:
    """The wrapped context, never over max_chars, the closing marker always kept; the scratch block (prior
    similar attempts) after the episodes, inside the same marker, its room taken from the episodes'."""
    inner_budget = max_chars - len(wrap_injected(""))
    scratch = scratch if len(scratch) + 2 < inner_budget // 2 else ""
    inner_budget -= len(scratch) + 2 if scratch else 0
    cards = [h for h in hits if is_strong(h)]
    pointers = "\n".join([WEAK_HEADER, *(pointer_line(h) for h in hits if not is_strong(h))])
    pointers = pointers if len(pointers) > len(WEAK_HEADER) else ""
    room = inner_budget - (len(pointers) + 2 if pointers else 0)
    overhead = len(HEADER) + 2 * len(cards)
    per_card = min(max((room - overhead) // max(len(cards), 1), 200), MAX_CARD_CHARS)
    episodes = [HEADER, *(format_episode(h, per_card) for h in cards)] if cards else []
    inner = _cut(escape_markers("\n\n".join(x for x in ("\n\n".join(episodes), pointers) if x)), inner_budget)
    return wrap_injected("\n\n".join(x for x in (inner, escape_markers(scratch)) if x))


def scratch_block(url: str, token: str, query: str) -> str:
    """Prior similar tool outcomes (scratch memory) in what is left of the budget; '' when off or failing."""
    if str(setting("hook_scratch", "true")).lower() in ("false", "0"):
        return ""
    remaining = deadline() - time.monotonic() - 0.05
    if remaining <= 0.05:
        return ""
    try:
        from episodic.scratch.hook_block import ask_scratch

        return ask_scratch(_post, url, token, query, remaining, PROTOCOL_VERSION, review_required())
    except Exception:  # a hint, never a reason to lose the episodes
        return ""


def start_and_retry(url: str, token: str, query: str, down: ServerDown) -> tuple[list[dict[str, Any]], str]:
    """No local server: start one in the background, ask it if it is up within the budget, else fail open.
    (the hits, what was done about the server: for the log line)."""
    return retry_started(url, down, lambda at, timeout: ask_server(at, token, query, timeout))


def retry_started(
    url: str, down: ServerDown, ask: Callable[[str, float], Answer], until: Callable[[], float] | None = None
) -> tuple[Answer, str]:
    """`start_and_retry` for any hook: `ask(url, timeout)` is its one request, `until()` its deadline."""
    from urllib.parse import urlsplit

    from episodic import autostart

    until = until or deadline
    parts = urlsplit(url)
    autostart_off = str(setting("hook_autostart", "true")).lower() in ("false", "0")
    if parts.scheme != "http" or (parts.hostname or "") not in LOCAL_HOSTS or autostart_off:
        raise down
    pid = autostart.start_local_server(envsource.home_dir(), parts.hostname or "", parts.port or 80)
    started = f"started `episodic serve` in the background (pid {pid})" if pid else "a server is starting"
    while (remaining := until() - time.monotonic() - 0.1) > 0.3:
        time.sleep(0.2)
        with contextlib.suppress(ServerDown):
            return ask(url, remaining - 0.2), started
    raise HookSkip(f"fail: no server answered; {started}")


def move_and_retry(
    url: str, token: str, query: str, foreign: ForeignServer
) -> tuple[list[dict[str, Any]], str, str]:
    """Another program holds the local port: move this home's server to a free port (saved in the config
    file) and start it there, unless the port is pinned (EPISODIC_PORT or `url`) or autostart is off."""
    return retry_moved(url, foreign, lambda at, timeout: ask_server(at, token, query, timeout))


def retry_moved(
    url: str,
    foreign: ForeignServer,
    ask: Callable[[str, float], Answer],
    until: Callable[[], float] | None = None,
) -> tuple[Answer, str, str]:
    """`move_and_retry` for any hook: `ask(url, timeout)` is its one request, `until()` its deadline."""
    from urllib.parse import urlsplit

    from episodic import autostart

    until = until or deadline
    parts = urlsplit(url)
    host, config = parts.hostname or DEFAULT_HOST, envsource.config_path()
    autostart_off = str(setting("hook_autostart", "true")).lower() in ("false", "0")
    if setting("url") or envsource.environ().get("EPISODIC_PORT") or autostart_off:
        where = "EPISODIC_PORT" if envsource.environ().get("EPISODIC_PORT") else f"`port` in {config}"
        raise HookSkip(f"{foreign}; set another free port ({where}) or stop that program")
    try:
        port = autostart.move_to_free_port(envsource.home_dir(), config, host)
    except (OSError, ValueError) as exc:
        raise HookSkip(f"{foreign}; could not move to a free port: {exc}") from exc
    if port is None:
        raise HookSkip(f"{foreign}; a server is being started already (setup or another prompt)")
    moved = f"moved this home's server to port {port} (saved in {config}) and started it"
    new_url = f"http://{'[' + host + ']' if ':' in host else host}:{port}/mcp"
    while (remaining := until() - time.monotonic() - 0.1) > 0.3:
        time.sleep(0.2)
        with contextlib.suppress(ServerDown):
            return ask(new_url, remaining - 0.2), moved, new_url
    raise HookSkip(f"{foreign}; {moved}")


def out_of_scope(payload: dict[str, Any]) -> None:
    """HookSkip when the scope rules (settings, the repository's `.episodic` file) exclude injection here."""
    from episodic.scope import ScopeRules

    cwd = payload.get("cwd")
    decision = ScopeRules.from_values(setting).decide("inject", cwd if isinstance(cwd, str) else "")
    if not decision.included:
        raise HookSkip(f"skip: {decision.reason}")


def held_out(payload: dict[str, Any], hits: list[dict[str, Any]], scratch: bool = False) -> bool:
    """The experiment's call-out: True when this session is in the holdout arm (the decision is logged);
    a holdout session gets neither episodes nor prior attempts."""
    from episodic.experiment import holdout

    try:
        return holdout.decide(payload, hits, setting, envsource.home_dir(), scratch) == "without"
    except Exception:  # an unrecorded decision is no experiment: the session gets its memory
        return False


PROMPT_EVENTS = ("UserPromptSubmit", "BeforeAgent")  # Claude Code and Codex CLI; Gemini CLI


def prompt_event(payload: dict[str, Any]) -> str:
    """The event the answer names: each CLI takes `hookSpecificOutput.additionalContext` under its own."""
    event = payload.get("hook_event_name")
    return event if event in PROMPT_EVENTS else PROMPT_EVENTS[0]


def run(stdin: TextIO) -> tuple[str, str]:
    """Do the work; returns (what to print, the log line). Raises HookSkip for every silent path."""
    max_chars = int(_number("hook_max_chars", DEFAULT_MAX_CHARS))
    if envsource.environ().get("EPISODIC_DISTILLING"):  # a distiller's own run: never recurse into memory
        raise HookSkip("skip: inside a background distil")
    if str(setting("hook_prompt", "true")).lower() in ("false", "0", "no", "off"):
        raise HookSkip("skip: switched off (hook_prompt = false)")
    payload = read_payload(stdin)
    prompt = prompt_of(payload)
    out_of_scope(payload)
    url, token = endpoint()
    # leave a margin for formatting and exit inside the budget
    remaining = deadline() - time.monotonic() - 0.05
    if remaining <= 0.05:
        raise HookSkip("fail: budget spent before the request")
    started = ""
    try:
        hits = ask_server(url, token, prompt[:MAX_QUERY_CHARS], remaining)
    except ServerDown as down:
        hits, started = start_and_retry(url, token, prompt[:MAX_QUERY_CHARS], down)
        started = f"; {started}"
    except ForeignServer as foreign:
        hits, started, url = move_and_retry(url, token, prompt[:MAX_QUERY_CHARS], foreign)
        started = f"; {str(foreign).removeprefix('fail: ')}; {started}"
    scratch = scratch_block(url, token, prompt[:MAX_QUERY_CHARS])
    if not hits and not scratch:
        if review_required():  # the real cause: only approved cards may be injected, and none matched
            raise HookSkip(
                f"ok: no approved card matched (review_required: approve cards in `episodic ui`){started}"
            )
        raise HookSkip(f"ok: no confident or weak match among verified episodes{started}")
    if held_out(payload, hits, bool(scratch)):
        withheld = " and prior attempts" if scratch else ""
        raise HookSkip(f"ok: holdout session (experiment): withheld {len(hits)} episode(s){withheld}")
    output = {
        "hookSpecificOutput": {
            "hookEventName": prompt_event(payload),
            "additionalContext": build_context(hits, max_chars, scratch),
        }
    }
    extra = " + prior similar attempts" if scratch else ""
    strong = sum(1 for h in hits if is_strong(h))
    injected = f"{strong} episode(s) and {len(hits) - strong} weak pointer(s)"
    return json.dumps(output, ensure_ascii=False), f"ok: injected {injected}{extra}{started}"


def guarded(
    run: Callable[[TextIO], tuple[str, str]],
    stdin: TextIO,
    stdout: TextIO,
    until: Callable[[], float],
    log: Callable[[str], None],
    name: str,
) -> int:
    """Always 0: `run` in a thread cut at `until()` (stdin never closed, a stalled server), its text
    written, one log line; every hook of this package runs through it."""
    import threading

    outcome: list[tuple[str, str]] = []

    def work() -> None:
        try:
            outcome.append(run(stdin))
        except HookSkip as skip:
            outcome.append(("", str(skip)))
        except BaseException as exc:  # fail open on anything
            outcome.append(("", f"fail: unexpected {type(exc).__name__}: {exc}"))

    worker = threading.Thread(target=work, name=name, daemon=True)
    worker.start()
    worker.join(max(until() - time.monotonic(), 0.0))
    if worker.is_alive() or not outcome:
        log("fail: timed out (budget exceeded)")
        return 0
    text, line = outcome[0]
    try:
        if text:
            stdout.write(text)
            stdout.flush()
    except Exception as exc:  # a closed stdout is not our failure to report to Claude Code
        line = f"fail: cannot write stdout ({type(exc).__name__})"
    log(line)
    return 0


def main(stdin: TextIO | None = None, stdout: TextIO | None = None) -> int:
    """Always 0; a watchdog thread ends the process silently if the budget runs out."""
    return guarded(run, stdin or sys.stdin, stdout or sys.stdout, deadline, _log, "hook")


def entry() -> None:
    """Process entry (`python -m episodic.hook`, `episodic hook user-prompt-submit`)."""
    global STARTED
    code = 0
    try:
        STARTED = time.monotonic() - _process_age()
        code = main()
        sys.stdout.flush()
    except BaseException:  # fail open: never a traceback on stderr, never a non-zero exit
        code = 0
    finally:
        os._exit(code)  # do not wait for a stuck worker thread


if __name__ == "__main__":
    entry()
