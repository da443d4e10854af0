"""Trust episodic's own Codex hook the way Codex's `/hooks` review does: through `codex app-server`
(JSON-RPC over stdio): `hooks/list` gives each hook's key, `currentHash` and `trustStatus`; `config/batchWrite`
upserts `hooks.state."<key>".trusted_hash`; a second `hooks/list` must then say "trusted" before it is claimed.

Codex 0.171 skips a non-managed hook until it is trusted, silently. The hash is Codex's own (never computed
here), and only hooks whose command is one of episodic's (prompt, failure, session end) in the hooks file setup
wrote are touched.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from episodic.cli.setup_clients import EPISODIC_HOOK_ARGS

APP_SERVER_SECONDS = 60.0  # a cold start of the 300 MB binary on a loaded machine


class CodexAppServerError(Exception):
    """The app-server did not start, answered an error, or timed out."""


@dataclass
class TrustOutcome:
    trusted: bool
    line: str  # what setup prints


class _AppServer:
    def __init__(self, codex: str, codex_home: Path, cwd: Path) -> None:
        env = {**os.environ, "CODEX_HOME": str(codex_home)}
        self.process = subprocess.Popen(
            [codex, "app-server"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            cwd=cwd,
            text=True,
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.next_id = 0

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)
        self.lines.put(None)  # exited: a codex without app-server must not cost the whole deadline

    def call(self, method: str, params: dict[str, Any], deadline: float) -> Any:
        self.next_id += 1
        wanted = self.next_id
        self._send({"id": wanted, "method": method, "params": params})
        while True:
            try:
                line = self.lines.get(timeout=max(deadline - time.monotonic(), 0.01))
            except queue.Empty as exc:
                raise CodexAppServerError(f"`codex app-server` did not answer {method} in time") from exc
            if line is None:
                raise self._exited(method)
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if isinstance(message, dict) and message.get("id") == wanted:
                if "error" in message:
                    raise CodexAppServerError(f"{method}: {str(message['error'].get('message'))[:200]}")
                return message.get("result")

    def _send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(json.dumps(message) + "\n")
            self.process.stdin.flush()
        except OSError as exc:
            raise self._exited(str(message.get("method"))) from exc

    def _exited(self, method: str) -> CodexAppServerError:
        try:
            code: int | str = self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            code = "unknown"
        return CodexAppServerError(f"`codex app-server` exited (code {code}) before answering {method}")

    def close(self) -> None:
        try:
            if self.process.stdin:
                self.process.stdin.close()
            self.process.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            self.process.kill()
            self.process.wait()


def _events(hooks: list[dict[str, Any]]) -> str:
    """The events of the hooks by their keys (`<hooks.json>:<event>:<group>:<handler>`): post_tool_use, …"""
    keys = [str(h.get("key", "")).rsplit(":", 3) for h in hooks]
    return ", ".join(sorted({key[1] for key in keys if len(key) == 4}))


def ours(hooks_list: Any, hooks_file: Path) -> list[dict[str, Any]]:
    """episodic's hooks in `hooks_file`, as `hooks/list` describes them."""
    found = []
    for entry in (hooks_list or {}).get("data") or []:
        for hook in entry.get("hooks") or [] if isinstance(entry, dict) else []:
            command = str(hook.get("command") or "")
            if (
                isinstance(hook, dict)
                and hook.get("sourcePath") == str(hooks_file)
                and command.rstrip().endswith(EPISODIC_HOOK_ARGS)
                and "episodic" in command
                and not hook.get("isManaged")
            ):
                found.append(hook)
    return found


def trust_episodic_hooks(codex_binary: str, codex_home: Path, hooks_file: Path) -> TrustOutcome:
    """Trust episodic's hooks in `hooks_file` (those not yet), verified by a second `hooks/list`."""
    manual = "trust it yourself: start `codex`, type /hooks and trust the episodic hooks"
    codex = shutil.which(codex_binary)
    if codex is None:
        return TrustOutcome(False, f"Codex hook trust: `{codex_binary}` is not on PATH; {manual}.")
    deadline = time.monotonic() + APP_SERVER_SECONDS
    try:
        server = _AppServer(codex, codex_home, hooks_file.parent)
    except OSError as exc:
        return TrustOutcome(False, f"Codex hook trust: cannot run {codex} ({exc}); {manual}.")
    try:
        server.call("initialize", {"clientInfo": {"name": "episodic-setup", "version": "1"}}, deadline)
        server._send({"method": "initialized"})
        hooks = ours(server.call("hooks/list", {}, deadline), hooks_file)
        if not hooks:
            return TrustOutcome(
                False, f"Codex hook trust: Codex does not list the hook of {hooks_file}; {manual}."
            )
        pending = {h["key"]: h["currentHash"] for h in hooks if h.get("trustStatus") != "trusted"}
        if not pending:
            return TrustOutcome(
                True, f"Codex hook trust: the episodic hooks are trusted already ({_events(hooks)})."
            )
        state = {key: {"trusted_hash": digest} for key, digest in pending.items()}
        edit = {"keyPath": "hooks.state", "value": state, "mergeStrategy": "upsert"}
        server.call("config/batchWrite", {"edits": [edit]}, deadline)
        after = ours(server.call("hooks/list", {}, deadline), hooks_file)
        if after and all(h.get("trustStatus") == "trusted" for h in after):
            return TrustOutcome(
                True,
                f"Codex hook trust: trusted the episodic hooks ({_events(after)}; as /hooks in codex would; "
                f"`hooks.state` in {codex_home / 'config.toml'}).",
            )
        return TrustOutcome(False, f"Codex hook trust: Codex still lists it as untrusted; {manual}.")
    except CodexAppServerError as exc:
        return TrustOutcome(False, f"Codex hook trust: {exc}; {manual}.")
    finally:
        server.close()


trust_failure_hook = trust_episodic_hooks  # the name setup used when only the failure hook was trusted
