"""History that outlives the agent's cleanup (issue 41), through the CLI in a fresh HOME: after Claude Code
deleted an indexed transcript, `index --upgrade` (the stand-in `claude`), `inspect --render`, the viewer's
transcript pane and `history show` still work from the kept trajectory; what is kept is the scrubbed
trajectory, per tenant, under its cap, and nothing with the opt-out; `inspect` and `doctor` count the
sessions the agent deletes within a week that are not indexed; `setup claude-code` raises
`cleanupPeriodDays` only when asked."""

from __future__ import annotations

import json
import lzma
import os
import re
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from kits import warm_cli
from kits.client_env import EPISODIC, bare_env, free_port, stop_spawned_server
from kits.fake_claude_kit import install_fake
from kits.secret_kit import TOKENS
from kits.session_builder import SessionWriter

PROJECT = "-home-dev-webshop"
PLANTED = [token for _, token in TOKENS[:4]]
DAY = 86400.0


class User:
    """A fresh HOME with Claude Code sessions, an episodic home (hashing embedder, no background server)."""

    def __init__(self, tmp: Path, config: str = "") -> None:
        self.tmp = tmp
        self.home, self.user_home = tmp / "episodic-home", tmp / "user-home"
        self.home.mkdir()
        self.user_home.mkdir()
        (self.home / "config.toml").write_text(
            f'embedder = "hashing"\nport = {free_port()}\nhook_autostart = false\n{config}'
        )
        self.env = bare_env(self.home, self.user_home)
        self.env["PATH"] = f"{install_fake(tmp / 'bin').parent}:{self.env['PATH']}"
        self.env["FAKE_CLAUDE_LOG"] = str(tmp / "fake-claude.log")
        self.projects = self.user_home / ".claude" / "projects" / PROJECT

    def session(self, session_id: str, day: str, problem: str, *, turns: int = 1) -> Path:
        writer = SessionWriter(session_id, day)
        writer.prompt(f"{problem}; the deploy key is {PLANTED[0]} and the token {PLANTED[1]}")
        for n in range(turns):
            writer.tool("Bash", {"command": "pytest -q"}, f"1 failed: {PLANTED[2]}", error=True)
            writer.tool(
                "Edit",
                {"file_path": f"/home/dev/webshop/fix{n}.py", "old_string": "a", "new_string": "b"},
                "ok",
            )
            writer.tool("Bash", {"command": "pytest -q"}, "3 passed")
        writer.reply(f"Fixed: {problem}. Tests pass; {PLANTED[3]} is rotated.")
        return writer.write(self.projects)

    def run(self, *args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
        done = warm_cli.run([str(EPISODIC), *args], env=self.env, capture_output=True, text=True, timeout=300)
        if ok:
            assert done.returncode == 0, (args, done.stdout, done.stderr)
        return done

    def kept(self, tenant: str = "local") -> list[Path]:
        folder = self.home / "trajectories" / tenant
        return sorted(folder.glob("*.kept")) if folder.is_dir() else []


SID = "aaaaaaaa-1111-4111-8111-000000000001"


def _unpacked(path: Path) -> str:
    """A kept file read as its documented format: a header line, then xz'd JSON."""
    header, body = path.read_bytes().split(b"\n", 1)
    assert header.startswith(b"episodic-kept 1 ")
    return lzma.decompress(body).decode()


@contextmanager
def viewer(user: User, *args: str) -> Iterator[urllib.request.OpenerDirector | str]:
    process = subprocess.Popen(
        [str(EPISODIC), "ui", "--no-open", *args],
        env=user.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        found = re.search(
            r"http://[0-9a-f]{32}\.localhost:\d+/\?key=\S+", line
        )  # a host name of its own per run
        assert found, line  # (its stderr is not read here: the viewer is still running)
        browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor())
        browser.open(found.group(0), timeout=30).read()  # the key becomes a cookie
        yield browser, found.group(0).split("?", 1)[0]
    finally:
        process.terminate()
        process.wait(timeout=20)


def test_a_deleted_transcript_is_still_upgraded_rendered_shown_and_in_history(tmp_path: Path) -> None:
    user = User(tmp_path)
    path = user.session(SID, "2026-11-01", "the checkout total is blank for discounted carts")
    user.run("index", "--distiller", "heuristic")
    path.unlink()  # what Claude Code's cleanup does after cleanupPeriodDays

    survey = user.run("inspect", "--render", str(path)).stdout
    assert "the checkout total is blank" in survey and "[REDACTED" in survey
    assert user.run("inspect", "--render", SID).stdout == survey  # by session id too
    assert not any(token in survey for token in PLANTED)

    upgraded = json.loads(user.run("index", "--upgrade", "--distiller", "claude-code", "--json").stdout)
    assert upgraded["indexed"] == 1 and upgraded["replaced"] == 1, upgraded
    stats = json.loads(user.run("stats", "--json").stdout)
    assert set(stats["by_distiller"]) == {"claude-code"}, stats
    assert "the checkout total is blank" in (tmp_path / "fake-claude.log").read_text()  # it read the survey

    with viewer(user) as (browser, base):
        page = browser.open(f"{base}episode/{SID}", timeout=30).read().decode()  # type: ignore[union-attr]
    assert 'id="survey"' in page and "the checkout total is blank" in page
    assert "not found on this machine" not in page

    shown = user.run("history", "show", SID).stdout
    assert "the checkout total is blank" in shown


def test_the_kept_file_is_the_scrubbed_trajectory_and_a_grown_session_replaces_it(tmp_path: Path) -> None:
    user = User(tmp_path)
    user.session(SID, "2026-11-01", "login redirects back to the form")
    user.run("index")
    assert json.loads(user.run("inspect", "--json").stdout)["kept"]["sessions"] == 1
    assert "kept trajectories: 1 session," in user.run("inspect").stdout
    (first,) = user.kept()
    raw = _unpacked(first)
    assert not any(token in raw for token in PLANTED)
    kept = json.loads(raw)
    assert kept["session_id"] == SID and "[REDACTED" in kept["request"] and kept["tool_calls"]
    assert oct(first.stat().st_mode & 0o777) == "0o600"

    user.session(SID, "2026-11-01", "login redirects back to the form", turns=3)  # the session grew
    user.run("index")
    (second,) = user.kept()
    assert len(json.loads(_unpacked(second))["tool_calls"]) == 9
    written = second.stat().st_ino, second.stat().st_mtime_ns
    user.run("index")  # unchanged: not rewritten
    assert user.kept() == [second] and (second.stat().st_ino, second.stat().st_mtime_ns) == written


def test_the_cap_evicts_the_oldest_sessions_first(tmp_path: Path) -> None:
    # ~1,000 bytes a kept session here: room for two, not three
    user = User(tmp_path, "keep_trajectories_max_mb = 0.0025\n")
    for n, day in enumerate(("2026-09-01", "2026-10-01", "2026-11-01"), 1):
        user.session(f"aaaaaaaa-1111-4111-8111-00000000000{n}", day, f"problem number {n} in the cart")
    report = json.loads(user.run("index", "--json").stdout)
    assert report["indexed"] == 3
    kept = user.kept()
    assert sum(p.stat().st_size for p in kept) <= 0.0025 * 1_000_000
    names = [p.stem[-1] for p in kept]
    assert names == ["2", "3"]  # the oldest session went first


def test_the_opt_out_keeps_nothing(tmp_path: Path) -> None:
    user = User(tmp_path, "keep_trajectories = false\n")
    path = user.session(SID, "2026-11-01", "the export job times out")
    user.run("index")
    assert not (user.home / "trajectories").exists()
    path.unlink()
    refused = user.run("inspect", "--render", str(path), ok=False)
    assert refused.returncode != 0 and "no Claude Code session found" in refused.stderr


def test_tenants_do_not_see_each_others_kept_trajectories(tmp_path: Path) -> None:
    user = User(tmp_path)
    path = user.session(SID, "2026-11-01", "the nightly export is slow")
    user.run("index", "--tenant", "alice")
    path.unlink()
    assert [p.parent.name for p in user.kept("alice")] == ["alice"] and not user.kept("bob")
    assert "the nightly export is slow" in user.run("inspect", "--render", SID, "--tenant", "alice").stdout
    refused = user.run("inspect", "--render", SID, "--tenant", "bob", ok=False)
    assert refused.returncode != 0 and "no kept trajectory" in refused.stderr
    assert "nightly export" not in refused.stdout + refused.stderr
    bob = user.run("index", "--upgrade", "--distiller", "claude-code", "--tenant", "bob", "--json", ok=False)
    assert json.loads(bob.stdout)["indexed"] == 0


def test_inspect_and_doctor_count_unindexed_sessions_the_agent_deletes_within_a_week(tmp_path: Path) -> None:
    user = User(tmp_path)
    now = time.time()
    ages = {"1": 26, "2": 25, "3": 10}  # days since last written; Claude Code's default period is 30
    paths = {}
    for n, age in ages.items():
        paths[n] = user.session(f"aaaaaaaa-1111-4111-8111-00000000000{n}", "2026-11-01", f"cart bug {n}")
        os.utime(paths[n], (now - age * DAY, now - age * DAY))
    empty = user.projects / "aaaaaaaa-1111-4111-8111-000000000009.jsonl"
    empty.write_text("")  # no episode: nothing is lost with it
    os.utime(empty, (now - 28 * DAY, now - 28 * DAY))

    risk = json.loads(user.run("inspect", "--json").stdout)["agent_cleanup"]
    assert (risk["deleted_within_week"], risk["deleted_within_week_unindexed"]) == (3, 2), risk
    user.run("index", str(paths["1"]))
    text = user.run("inspect").stdout
    assert "Claude Code deletes sessions after 30 days" in text and "1 of them not indexed yet" in text

    checks = {c["name"]: c for c in json.loads(user.run("doctor", "--json", ok=False).stdout)}
    assert (
        checks["agent cleanup"]["status"] == "warn"
        and "1 of them not indexed" in checks["agent cleanup"]["detail"]
    )
    assert "--keep-transcripts-days" in checks["agent cleanup"]["fix"]

    settings = user.user_home / ".claude" / "settings.json"
    settings.write_text(json.dumps({"cleanupPeriodDays": 90}))
    risk = json.loads(user.run("inspect", "--json").stdout)["agent_cleanup"]
    assert (risk["deleted_within_week"], risk["deleted_within_week_unindexed"]) == (0, 0), risk
    checks = {c["name"]: c for c in json.loads(user.run("doctor", "--json", ok=False).stdout)}
    assert checks["agent cleanup"]["status"] == "ok"


def test_setup_raises_cleanup_period_days_only_with_consent(tmp_path: Path) -> None:
    user = User(tmp_path)
    settings = user.user_home / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps({"model": "opus", "cleanupPeriodDays": 20}))
    try:
        plain = user.run("setup", "claude-code", "--write", "--distiller", "heuristic")  # not a terminal: no
        assert json.loads(settings.read_text())["cleanupPeriodDays"] == 20
        assert "--keep-transcripts-days 365" in plain.stderr

        raised = user.run(
            "setup", "claude-code", "--write", "--distiller", "heuristic", "--keep-transcripts-days", "180"
        )
        data = json.loads(settings.read_text())
        assert data["cleanupPeriodDays"] == 180 and data["model"] == "opus" and data["hooks"]
        assert "cleanupPeriodDays 20 → 180" in raised.stdout
        backups = list(settings.parent.glob("settings.json.bak-*"))
        assert any(json.loads(b.read_text()).get("cleanupPeriodDays") == 20 for b in backups)

        lower = user.run(
            "setup", "claude-code", "--write", "--distiller", "heuristic", "--keep-transcripts-days", "60"
        )
        assert (
            json.loads(settings.read_text())["cleanupPeriodDays"] == 180 and "never lowered" in lower.stdout
        )
        bad = user.run("setup", "claude-code", "--keep-transcripts-days", "0", ok=False)
        assert bad.returncode != 0 and "--keep-transcripts-days must be" in bad.stderr
    finally:
        stop_spawned_server(user.home)


def test_a_kept_session_a_scope_rule_now_excludes_is_neither_redistilled_nor_rendered(tmp_path: Path) -> None:
    user = User(tmp_path)
    path = user.session(SID, "2026-11-01", "the coupon field rejects valid codes")
    user.run("index", "--distiller", "heuristic")
    path.unlink()
    with (user.home / "config.toml").open("a") as config:
        config.write('index_exclude = ["/home/dev/webshop"]\n')
    upgraded = user.run("index", "--upgrade", "--distiller", "claude-code", "--json", ok=False)
    assert json.loads(upgraded.stdout)["indexed"] == 0
    assert not (tmp_path / "fake-claude.log").exists()  # nothing was sent to the distiller
    refused = user.run("inspect", "--render", SID, ok=False)
    assert refused.returncode != 0 and "coupon" not in refused.stdout


def _bomb(path: Path, inflated: int) -> None:
    """A kept file's header, then xz streams of a trajectory whose one message inflates to `inflated`
    bytes: the first stream alone (96 MB) is past the reader's bound, the rest repeat one stream."""
    header = path.read_bytes().split(b"\n", 1)[0] + b"\n"
    block = 8 << 20
    first_blocks = 12
    prefix = json.dumps({"session_id": SID, "messages": [{"role": "user", "text": ""}]})[:-4].encode()
    packer = lzma.LZMACompressor(preset=0)
    chunks = [packer.compress(prefix)]
    chunks += [packer.compress(b"a" * block) for _ in range(first_blocks)]
    first = b"".join([*chunks, packer.flush()])
    repeated = lzma.compress(b"a" * block * 8, preset=0)
    repeats = (inflated - first_blocks * block) // (block * 8)
    path.write_bytes(header + first + repeated * repeats + lzma.compress(b'"}]}', preset=0))


def _peak_rss_mb(user: User, *args: str) -> tuple[int, str, float]:
    """(exit code, stderr, peak resident MB) of one CLI run (its own rusage, not the test's)."""
    err = user.tmp / "stderr.txt"
    with err.open("w") as errors:
        process = subprocess.Popen(
            [str(EPISODIC), *args], env=user.env, stdout=subprocess.DEVNULL, stderr=errors
        )
        _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    return process.returncode, err.read_text(), usage.ru_maxrss / 1024


def _indexed_and_deleted(tmp_path: Path) -> tuple[User, Path]:
    """A user whose one session is indexed and its transcript deleted: (the user, its kept file)."""
    user = User(tmp_path)
    path = user.session(SID, "2026-11-01", "the checkout total is blank for discounted carts")
    user.run("index", "--distiller", "heuristic")
    path.unlink()
    (kept,) = user.kept()
    return user, kept


def test_a_kept_file_that_inflates_to_a_gigabyte_is_refused_within_a_bound(tmp_path: Path) -> None:
    """Issue 52 item 4: a ~150 KB kept file of 1 GB of JSON; `inspect --render` stays under 512 MB."""
    user, kept = _indexed_and_deleted(tmp_path)
    _bomb(kept, 1 << 30)
    assert kept.stat().st_size < 400_000
    code, stderr, peak = _peak_rss_mb(user, "inspect", "--render", SID)
    assert code != 0 and "no kept trajectory of that session" in stderr, stderr
    assert "Traceback" not in stderr
    assert peak < 512, f"inspect --render peaked at {peak:.0f} MB"


def test_a_kept_file_behind_a_link_or_a_fifo_is_not_read(tmp_path: Path) -> None:
    user, kept = _indexed_and_deleted(tmp_path)
    elsewhere = tmp_path / "elsewhere.kept"
    kept.rename(elsewhere)
    kept.symlink_to(elsewhere)  # a real kept file, but through a link
    linked = user.run("inspect", "--render", SID, ok=False)
    assert linked.returncode != 0 and "no kept trajectory" in linked.stderr, linked.stderr
    kept.unlink()
    os.mkfifo(kept)
    fifo = user.run("inspect", "--render", SID, ok=False)  # would wait for a writer forever
    assert fifo.returncode != 0 and "no kept trajectory" in fifo.stderr, fifo.stderr


def test_a_session_named_like_anothers_hashed_file_does_not_overwrite_its_kept_copy(tmp_path: Path) -> None:
    """Issue 52 item 4: an id that is no safe file name is kept as `h-<hex>`; a session whose id is that
    stem must not take its place."""
    import hashlib

    user = User(tmp_path)
    victim_id = "victim session one"  # a space: no safe file name, so hashed
    victim = user.session(victim_id, "2026-11-01", "the checkout total is blank for discounted carts")
    stem = "h-" + hashlib.sha256(victim_id.encode()).hexdigest()[:40]
    intruder = user.session(stem, "2026-11-02", "the invoice pdf renders with no fonts")
    user.run("index", "--distiller", "heuristic")
    victim.unlink()
    intruder.unlink()
    assert "the checkout total is blank" in user.run("inspect", "--render", victim_id).stdout
    assert "the invoice pdf renders" in user.run("inspect", "--render", stem).stdout
