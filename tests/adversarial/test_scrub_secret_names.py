"""Secrets under a secret name that read as a call or a path, letters-only halves and passwords, a GCP key id, and an
AWS key id's last characters in the next message: random draws of each form, in every engine (identical output),
and the split key id through `inspect --render`, the index, MCP and harvest; ordinary text beside them stays.

The shapes' fixed rows (tests/secret_shapes.py) run through every flow in test_scrub_shapes.py; this file draws many
of each form, as the attack round did (500 a form)."""

from __future__ import annotations

import json
import os
import random
import string
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from episodic.assembly import build_memory
from episodic.core.ingest import index_sessions
from episodic.kernel.auth import SCOPES, WRITE, Principal
from episodic.kernel.settings import load_settings
from episodic.mcp.tools import default_registry
from episodic.scrub import Scrubber, default_scrubber
from episodic.scrub.engine import hyperscan_available

from .conftest import claude_messages, cli
from .test_scrub_places import harvested_bodies

DRAWS = 500
ENGINES = ["ahocorasick", "python"] + (["hyperscan"] if hyperscan_available() else [])
SCRUBBERS = {engine: Scrubber(engine=engine) for engine in ENGINES}
DJANGO = string.ascii_lowercase + string.digits + "!@#$%^&*(-_=+)"  # get_random_secret_key's alphabet
DJANGO_NO_PARENS = DJANGO.replace("(", "").replace(")", "")
LETTERS = string.ascii_letters
B64 = string.ascii_letters + string.digits + "/+"

Draw = Callable[[random.Random], tuple[str, str]]  # (text, the secret part that must not survive)


def _pick(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _django(rng: random.Random, shape: str) -> str:
    """A Django key that reads as a call (`(x)y`, `abc(x)y`) or is drawn whole."""
    if shape == "paren":
        return "(" + _pick(rng, DJANGO_NO_PARENS, 6) + ")" + _pick(rng, DJANGO_NO_PARENS, 43)
    if shape == "call":
        head = _pick(rng, string.ascii_lowercase, 3) + "(" + _pick(rng, string.ascii_lowercase, 1)
        return head + _pick(rng, DJANGO_NO_PARENS, 5) + ")" + _pick(rng, DJANGO_NO_PARENS, 40)
    return _pick(rng, DJANGO, 50)


def _aws_split(rng: random.Random, head: str) -> tuple[str, str]:
    first = "/" + _pick(rng, LETTERS + "+", 19) if head == "slash" else _pick(rng, string.ascii_lowercase, 13)
    first = first if head == "slash" else first + _pick(rng, LETTERS, 7)
    rest = _pick(rng, B64, 20)
    return f"aws_secret_access_key={first}\n{rest}", first.lstrip("/")


FORMS: dict[str, Draw] = {
    "django (x)y double-quoted": lambda r: (lambda k: (f'SECRET_KEY = "{k}"', k[1:]))(_django(r, "paren")),
    "django (x)y single-quoted": lambda r: (lambda k: (f"SECRET_KEY = '{k}'", k[1:]))(_django(r, "paren")),
    "django abc(x)y unquoted": lambda r: (lambda k: (f"SECRET_KEY={k}", k[5:]))(_django(r, "call")),
    "django abc(x)y quoted": lambda r: (lambda k: (f'SECRET_KEY = "{k}"', k[5:]))(_django(r, "call")),
    "django any, quoted": lambda r: (lambda k: (f"SECRET_KEY = '{k}'", k))(_django(r, "any")),
    "django any, unquoted": lambda r: (lambda k: (f"DJANGO_SECRET_KEY={k}", k))(_django(r, "any")),
    ". then letters": lambda r: (lambda v: (f"DB_PASSWORD=.{v}", v))(_pick(r, LETTERS, 19)),
    "/ then letters, quoted": lambda r: (lambda v: (f'API_SECRET="/{v}"', v))(_pick(r, LETTERS, 19)),
    "AWS 20/20, letters head": lambda r: _aws_split(r, "letters"),
    "AWS 20/20, / head": lambda r: _aws_split(r, "slash"),
    "GCP private_key_id": lambda r: (lambda v: (f'"private_key_id": "{v}",', v))(
        _pick(r, "0123456789abcdef", 40)
    ),
}


def _survivors(draw: Draw, seed: int) -> tuple[int, list[str]]:
    """How many of DRAWS draws (plain and JSON-escaped) leave their secret in any engine's output; the engines must
    agree on every output."""
    rng = random.Random(seed)
    left, examples = 0, []
    for _ in range(DRAWS):
        text, secret = draw(rng)
        for variant in (text, json.dumps(text)[1:-1]):
            outputs = {engine: scrubber.scrub(variant) for engine, scrubber in SCRUBBERS.items()}
            assert len(set(outputs.values())) == 1, outputs
            if secret in outputs["python"] or json.dumps(secret)[1:-1] in outputs["python"]:
                left += 1
                examples.append(variant)
    return left, examples[:3]


@pytest.mark.parametrize("form", sorted(FORMS))
def test_no_draw_of_a_named_secret_survives_in_any_engine(form: str) -> None:
    left, examples = _survivors(FORMS[form], seed=60)
    assert left == 0, (form, examples)


def test_letters_only_passwords_in_prose_are_redacted() -> None:
    """Letters only: a name's words look the same (`hashedPassword`), so a few random ones read as a name.
    Measured over 500 draws of 14 letters (docs/security.md); the rest must go."""

    def draw(rng: random.Random) -> tuple[str, str]:
        value = _pick(rng, LETTERS, 14)
        return f"my password: {value}", value

    left, examples = _survivors(draw, seed=61)
    assert left <= 0.03 * 2 * DRAWS, (left, examples)


def test_the_same_key_as_a_dict_value_is_redacted() -> None:
    """What harvest and ingest scrub: the name is the JSON key."""
    key_id = _pick(random.Random(63), "0123456789abcdef", 40)
    out = default_scrubber().scrub_obj({"type": "service_account", "private_key_id": key_id, "key_id": "k-1"})
    assert out == {"type": "service_account", "private_key_id": "[REDACTED:secret]", "key_id": "k-1"}


# ------------------------------------------------------------------ an AWS key id's last characters, next message

SESSION = "60606060-0000-4000-8000-000000000006"
B32 = string.ascii_uppercase + "234567"
KEY_IDS = ["AKIA" + _pick(random.Random(62 + n), B32, 16) for n in range(5)]
# (how the first message ends, how the next one begins): the rest after a line break, a space, a quote, glued to
# a word, or alone; the first message may end on a line break
SPLITS = [
    (KEY_IDS[0][:19], "\n" + KEY_IDS[0][19:] + " is the last character, then the upload failed"),
    (KEY_IDS[1][:18], " " + KEY_IDS[1][18:] + " and the rest of the log"),
    (KEY_IDS[2][:18] + "\n", KEY_IDS[2][18:] + "\nthe upload failed again"),
    (KEY_IDS[3][:17], "`" + KEY_IDS[3][17:] + "` was cut by the terminal"),
    (KEY_IDS[4][:19], KEY_IDS[4][19:] + "7is what the console showed"[1:]),
]
KEPT = "Then I ran the deploy again and it passed."


def _split_session(folder: Path) -> Path:
    messages: list[tuple[str, Any]] = [
        ("user", "the deploy fails with an access denied error, find which key it used")
    ]
    for head, rest in SPLITS:  # the user's messages: each is shown to the distiller (later prompts)
        messages += [("user", f"The deploy used the key id {head}"), ("user", rest), ("user", KEPT)]
    messages.append(
        ("assistant", [{"type": "text", "text": "The key id is redacted in the log; rotate that key."}])
    )
    path = folder / f"{SESSION}.jsonl"
    path.write_text(claude_messages(SESSION, messages))
    old = time.time() - 7200  # past harvest's quiet period
    os.utime(path, (old, old))
    return path


def _key_id_leaks(blob: str, bare_tail: bool = True) -> list[str]:
    """Any part of a planted key id left: its head after AKIA, its rest (with the words after it, as one
    character alone is found anywhere). `bare_tail=False` for binary files (an index, compressed pages), where
    any two letters occur by chance: the rest is then looked for with the words that followed it."""
    found = []
    kept = blob.replace("[REDACTED:aws-access-key]", "\0")
    for (head, rest), key_id in zip(SPLITS, KEY_IDS, strict=True):
        cut = len(head.strip())
        tail = key_id[cut:]
        in_context = rest.lstrip(" \n`")[: len(tail) + 6]
        for part in (key_id[4:cut], in_context, tail if len(tail) >= 2 and bare_tail else ""):
            if part and part in kept:
                found.append(part)
    return found


def test_an_aws_key_ids_last_characters_in_the_next_message_never_leave(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    claude = tmp_path / "claude"
    folder = claude / "projects" / "-home-dev-app"
    folder.mkdir(parents=True)
    transcript = _split_session(folder)

    rendered = cli(tmp_path / "render-home", "inspect", "--render", str(transcript))
    assert rendered.returncode == 0, rendered.stderr
    assert rendered.stdout.count("[REDACTED:aws-access-key]") >= 2 * len(SPLITS), rendered.stdout
    assert _key_id_leaks(rendered.stdout) == [], rendered.stdout
    assert KEPT in rendered.stdout

    settings = load_settings(home=tmp_path / "home", embedder="hashing", distiller="heuristic")
    memory = build_memory(settings)
    assert index_sessions(memory, [str(folder)], "local").indexed == 1
    stored = b"".join(p.read_bytes() for p in settings.home.rglob("*") if p.is_file())
    assert b"[REDACTED:aws-access-key]" in stored
    assert _key_id_leaks(stored.decode("utf-8", "replace"), bare_tail=False) == []
    answer = default_registry(memory).call(
        "get_episode", {"session_id": SESSION}, Principal("local", SCOPES[WRITE])
    )
    assert not answer.get("isError") and _key_id_leaks(json.dumps(answer)) == []

    (tmp_path / "harvest").mkdir()
    bodies = harvested_bodies(claude, tmp_path / "harvest", monkeypatch)
    uploaded = b"".join(bodies).decode("utf-8", "replace")
    assert "[REDACTED:aws-access-key]" in uploaded and KEPT in uploaded
    assert _key_id_leaks(uploaded) == []
