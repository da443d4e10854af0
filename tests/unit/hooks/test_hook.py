"""The hook's pure parts: prompt filtering, the 4,000-char budget, fact phrasing, the light import path."""

from __future__ import annotations

import io
import json
import subprocess
import sys

import pytest
from episodic.hooks import packing as hook_packing
from episodic.hooks import payload as hook_payload
from episodic.hooks import prompt as hook
from episodic.hooks import server_client as hook_server
from episodic.plumbing.marker import INJECTED_CLOSE, INJECTED_OPEN


def _hit(i: int, size: int = 100) -> dict:
    return {
        "session_id": f"s{i}",
        "project": "proj",
        "date": "2026-01-12",
        "score": 0.8,
        "similarity": 0.7,
        "confidence": "strong",
        "card": {
            "problem": "p" * size,
            "insight": "i" * size,
            "dead_ends": ["d" * size] * 8,
            "misleading_intuitions": ["m" * size] * 6,
            "critical_checks": ["c" * size] * 6,
            "outcome": "verified",
        },
    }


@pytest.mark.parametrize("size", [10, 100, 600])
@pytest.mark.parametrize("count", [1, 2, 3])
def test_context_never_exceeds_4000_chars_and_is_wrapped(size: int, count: int) -> None:
    text = hook.build_context([_hit(i, size) for i in range(count)], 4000)
    assert len(text) <= 4000
    assert text.startswith(INJECTED_OPEN) and text.endswith(INJECTED_CLOSE)
    assert text.count("A close past match (2026-01-12, project proj, similarity 0.70) found: ") == count
    for i in range(count):
        assert f"session s{i}" in text


@pytest.mark.parametrize("max_chars", [300, 1000, 10_000])
def test_a_smaller_configured_budget_keeps_the_marker_whole(max_chars: int) -> None:
    text = hook.build_context([_hit(i, 600) for i in range(3)], max_chars)
    assert len(text) <= max_chars
    assert text.startswith(INJECTED_OPEN) and text.endswith(INJECTED_CLOSE)


def test_episode_is_phrased_as_facts() -> None:
    text = hook_packing.format_episode(
        {
            "session_id": "abc",
            "date": "2026-01-12",
            "project": "x",
            "card": {"problem": "P", "insight": "I", "dead_ends": ["D"]},
        },
        1000,
    )
    assert text.splitlines()[0] == "A close past match (2026-01-12, project x) found: I"
    assert "Dead ends there: D" in text
    assert not any(word in text.lower() for word in ("you must", "you should", "always ", "never "))


@pytest.mark.parametrize(
    ("prompt", "reason"),
    [
        ("/clear", "slash"),
        ("  /review this pull request please now", "slash"),
        ("fix the bug", "short"),
        ("a" * 50, "short"),
    ],
)
def test_skips(prompt: str, reason: str) -> None:
    with pytest.raises(hook.HookSkip, match=reason):
        hook_payload.read_prompt(io.StringIO(json.dumps({"prompt": prompt})))


def test_real_prompts_pass() -> None:
    prompt = "the docker build fails with permission denied on the npm cache"
    assert hook_payload.read_prompt(io.StringIO(json.dumps({"prompt": prompt}))) == prompt


def test_hook_imports_only_the_stdlib_before_the_network_call() -> None:
    code = (
        "import sys; import episodic.hooks.prompt; "
        "heavy = [m for m in sys.modules if m.split('.')[0] in "
        "('pydantic', 'click', 'numpy', 'rich', 'jsonschema', 'pydantic_settings', 'mcp', 'httpx2')"
        " or (m.startswith('episodic.') and m not in ('episodic.hooks', 'episodic.plumbing', 'episodic.hooks.prompt', 'episodic.hooks.payload', 'episodic.hooks.server_client', 'episodic.hooks.packing', "
        "'episodic.plumbing.envsource', 'episodic.plumbing.marker', 'episodic.plumbing.bounded', 'episodic.plumbing.hook_choice'))]; "
        "print(heavy)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == "[]"


def test_no_home_folder_still_exits_0_silently(monkeypatch: pytest.MonkeyPatch) -> None:
    # Path.home() raises when HOME is unset and the uid has no passwd entry (some containers)
    def no_home(env: object = None) -> None:
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.setattr(hook_payload, "_CONFIG", {})
    monkeypatch.setattr(hook.envsource, "home_dir", no_home)
    stdout = io.StringIO()
    stdin = io.StringIO(json.dumps({"prompt": "pytest cannot find my fixture after moving the conftest"}))
    assert hook.main(stdin, stdout) == 0
    assert stdout.getvalue() == ""


@pytest.mark.parametrize("limit", [0, 1, 5, 20, 200])
def test_the_hooks_stdlib_copies_match_the_presentation_module(limit: int) -> None:
    from episodic.cards import present

    texts = ["", "short", "a fairly long line of text that will need cutting " * 3, "trailing spaces   " * 4]
    for text in texts:
        assert hook_packing._cut(text, limit) == present.cut(text, limit)
    lines = [f"line {i}: " + "word " * (i * 7) for i in range(6)]
    for budget in (10, 60, 150, 400):
        for min_room in (0, 20, 40):
            assert hook_packing._fit_lines(lines, budget + limit, min_room) == present.fit_lines(
                lines, budget + limit, min_room
            )


def test_the_hooks_defaults_are_the_settings_defaults() -> None:
    from episodic.kernel.settings import Settings

    fields = Settings.model_fields
    assert fields["hook_budget_seconds"].default == hook_payload.DEFAULT_BUDGET_SECONDS
    assert fields["hook_max_chars"].default == hook.DEFAULT_MAX_CHARS
    assert (fields["host"].default, fields["port"].default) == (
        hook_server.DEFAULT_HOST,
        hook_server.DEFAULT_PORT,
    )


def test_the_scratch_block_goes_after_the_episodes_inside_one_marker() -> None:
    block = "## Prior similar attempts (tenant-scoped, last 7d)\n- [fail][tests] tests failed (session s1)\nUse these as hints."
    both = hook.build_context([_hit(0)], 4000, block)
    alone = hook.build_context([], 4000, block)
    assert both.count(INJECTED_OPEN) == 1 and alone.count(INJECTED_OPEN) == 1
    assert both.index(hook_packing.HEADER) < both.index(block) and len(both) <= 4000
    assert hook_packing.HEADER not in alone and block in alone
    assert hook.build_context([_hit(0)], 4000) == hook.build_context([_hit(0)], 4000, "")


def test_the_hooks_pointer_line_is_the_presentation_modules() -> None:
    from episodic.cards import present

    assert hook_packing.WEAK_HEADER == present.WEAK_HEADER
    for problem in (
        "short",
        "a problem " * 20,
        "  spaced\n\nout   problem  ",
        "Fix CI lint. CI runs on a fresh checkout, where the generated client is not ignored. Asked: why?",
        "A first sentence long enough to name the matter on its own. Then more.",
        "Add an MIT license? Created LICENSE with the standard text.",
    ):
        hit = {"session_id": "0123456789abcdef", "date": "2026-01-12", "card": {"problem": problem}}
        assert hook_packing.pointer_line(hit) == present.pointer_line(
            "0123456789abcdef", "2026-01-12", problem
        )
    assert hook_packing.pointer_line({"card": {}}).startswith("- undated ?")


def test_a_pointer_whose_problem_opens_with_a_title_names_the_matter_too() -> None:
    problem = (
        "Fix CI lint. CI runs on a fresh checkout, where the generated client is not ignored. Asked: why?"
    )
    hit = {
        "session_id": "0123456789abcdef",
        "date": "2026-01-12",
        "card": {"problem": problem},
        "confidence": "weak",
    }
    context = hook.build_context([hit], 4000)
    assert (
        "01234567 Fix CI lint. CI runs on a fresh checkout, where the generated client is not ignored."
        in context
    )
    long_first = "A first sentence long enough to name the matter on its own. Then more."
    assert hook_packing.pointer_line({**hit, "card": {"problem": long_first}}).endswith("on its own.")
