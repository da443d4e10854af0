"""The offline card's problem as `index` writes it: the task or symptom, never a sentence the insight says too,
never a tool's status line said back ("Already up to date …")."""

from __future__ import annotations

import json
import re
from pathlib import Path

from kits.client_env import DEMO, episodic
from kits.session_builder import SessionWriter

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def _sentences(text: str) -> set[str]:
    return {" ".join(re.findall(r"\w+", s.lower())) for s in _SENTENCE_END.split(text) if len(s.split()) >= 4}


def _cards(home: Path, corpus: Path) -> dict[str, dict]:
    (home / "config.toml").write_text('embedder = "hashing"\n')
    assert episodic("index", str(corpus)).returncode == 0
    folder = home.parent / "cards"
    done = episodic("cards", "export", str(folder))
    assert done.returncode == 0, done.stderr
    read = {path.stem: json.loads(path.read_text()) for path in folder.glob("*.json")}
    return {session: card for session, card in read.items() if "problem" in card}  # not the folder's manifest


def test_no_demo_card_says_a_sentence_in_both_its_problem_and_its_insight(episodic_home: Path) -> None:
    cards = _cards(episodic_home, DEMO)
    assert len(cards) == 6
    for session, card in cards.items():
        both = _sentences(card["problem"]) & _sentences(card["insight"])
        assert not both, (session, card["problem"], card["insight"])


def test_a_git_status_said_back_is_not_the_problem(episodic_home: Path, tmp_path: Path) -> None:
    corpus = tmp_path / "projects" / "-home-dev-webshop"
    (
        SessionWriter("0b7e1c7a-5a7e-4c59-9d7c-1a2b3c4d5e6f", "2026-03-02")
        .prompt("we need to fix some merge conflicts")
        .reply("Let me check the current state of the merge conflicts.")
        .tool("Bash", {"command": "git merge main"}, "Already up to date.")
        .reply(
            "Already up to date — your branch already has all of main's changes (from the merge commit). "
            "No conflicts to resolve."
        )
        .prompt("ok, the conflict is in manual_commit_hooks.go after I pulled, can you look again?")
        .tool("Bash", {"command": "go test ./..."}, "ok  \tgithub.com/acme/cli\t0.8s")
        .reply("Resolved the conflict in the hooks file and kept both changes. All tests pass.")
        .write(corpus)
    )
    (card,) = _cards(episodic_home, tmp_path / "projects").values()
    assert "up to date" not in card["problem"].lower(), card["problem"]
    assert "merge conflicts" in card["problem"].lower(), card["problem"]
