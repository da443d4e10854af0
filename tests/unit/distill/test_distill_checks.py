"""Card rules, outcome judged on evidence, enforcement and payload parsing."""

from __future__ import annotations

import json

import pytest
from episodic.distill.checks import (
    card_violations,
    enforce_card,
    judge_outcome,
    parse_card_payload,
    text_violations,
)
from episodic.distill.evidence import calls_before, evidence_after, last_edit_position, tool_calls_in
from episodic.kernel.errors import InvalidCardError
from episodic.kernel.models import Card, Outcome
from kits.distill_builders import bash, edit, prompt, say, tool, trajectory


def card(**fields: object) -> Card:
    base: dict[str, object] = {
        "problem": "The list shows stale rows after an optimistic update is rolled back."
    }
    base.setdefault("outcome", Outcome.VERIFIED)
    return Card(**{**base, "outcome": Outcome.VERIFIED, **fields})


# ------------------------------------------------------------------ card_violations

ALLOWED = [
    "the build failed",
    "Ran go test and npm run check: both passed",
    "npm run check passed locally but failed in CI on the pull request",
    "Bypassed the pre-commit hook with --no-verify, then reverted that",
    "package.json and CLAUDE.md were out of date",
    "input/output errors and/or timeouts",
    "the class that handles retries looked guilty",
    "import cycles between packages",
    "Next.js app with React and Tailwind",
    "node_modules/@prisma was ignored by git",
    "see the docs at https://example.com/guide/setup/intro",
    "Suspected the reducer; a structural clone changed nothing",
    "exit code 1 from the linter (3 errors)",
]

FORBIDDEN = [
    ("```go\nfunc main() {}\n```", "code block"),
    ("if (x) { y(); }", "code"),
    ("def load_config(path):", "code definition"),
    ("func (s *Server) Start() error", "code definition"),
    ("class Repo(Base): pass", "code definition"),
    ("import os", "import statement"),
    ("from pathlib import Path", "import statement"),
    ("go test ./... 2>&1 | tail -20", "shell pipeline"),
    ("git log --oneline | grep fix", "shell pipeline"),
    ("cmd.Flags().String(name, value)", "code expression"),
    ("state := loadState()", "code expression"),
    ("Traceback (most recent call last):", "stack trace"),
    ("    at render (App.js:10:5)", "stack trace"),
    ("goroutine 1 [running]:", "stack trace"),
    ('File "app.py", line 3, in <module>', "stack trace"),
    ("panic: runtime error: invalid memory address 0xc000012345", "stack trace"),
    ("the error is at main.go:42", "source location"),
    ("edited /Users/dev/project/src/main.go", "file path"),
    ("config lives in ~/.claude/settings", "file path"),
    ("C:\\Users\\dev\\app", "file path"),
    ("changed src/foo/bar.go and the tests", "file path"),
    ("touched .github/workflows/ci.yml", "file path"),
]


@pytest.mark.parametrize("text", ALLOWED)
def test_ordinary_prose_and_command_names_pass(text: str) -> None:
    assert text_violations("problem", text) == []


@pytest.mark.parametrize(("text", "kind"), FORBIDDEN)
def test_code_paths_and_traces_are_named(text: str, kind: str) -> None:
    violations = text_violations("insight", text)
    assert any(v.startswith(f"insight: {kind}: ") for v in violations), violations


def test_card_violations_name_the_field_and_snippet() -> None:
    bad = card(steps=["Read the handler", "Edited src/app/handler.go"], tags=["go"])
    assert card_violations(bad) == ["steps[1]: file path: 'src/app/handler.go'"]
    assert card_violations(card(steps=["Read the handler"])) == []


# ------------------------------------------------------------------ judge_outcome


def test_no_edits_is_informational() -> None:
    traj = trajectory(prompt("why is the queue slow?"), tool("Read", "/p/a.go"), bash("go test ./...", "ok"))
    assert judge_outcome(traj) is Outcome.INFORMATIONAL


def test_passing_check_after_last_edit_is_verified() -> None:
    traj = trajectory(
        prompt("tests fail"),
        bash("go test ./...", "--- FAIL: TestX", exit_code=1),
        edit(),
        bash("go test ./...", "ok"),
    )
    assert judge_outcome(traj) is Outcome.VERIFIED


def test_pass_before_the_last_edit_is_not_verified() -> None:
    traj = trajectory(prompt("fix it"), edit(), bash("pytest -q", "3 passed"), edit())
    assert judge_outcome(traj) is Outcome.UNVERIFIED


def test_hedged_closing_summary_is_not_evidence() -> None:
    traj = trajectory(prompt("fix it"), edit(), say("This should fix it; it should work now."))
    assert judge_outcome(traj) is Outcome.UNVERIFIED


def test_failed_last_check_is_failed() -> None:
    traj = trajectory(
        prompt("fix"), edit(), bash("npm test", "ok"), bash("npm run lint", "2 errors", exit_code=1)
    )
    assert judge_outcome(traj) is Outcome.FAILED


def test_failure_hidden_behind_a_pipe_is_failed() -> None:
    traj = trajectory(
        prompt("fix"), edit(), bash("go test ./... 2>&1 | tail -5", "--- FAIL: TestParse\nFAIL")
    )
    assert judge_outcome(traj) is Outcome.FAILED


def test_user_confirmation_after_last_edit_is_verified() -> None:
    traj = trajectory(
        prompt("the page is blank"), edit(), say("Try reloading."), prompt("works now, thanks!")
    )
    assert judge_outcome(traj) is Outcome.VERIFIED


def test_thanks_alone_is_not_confirmation() -> None:
    traj = trajectory(prompt("the page is blank"), edit(), say("Done."), prompt("great, thanks"))
    assert judge_outcome(traj) is Outcome.UNVERIFIED


def test_user_saying_still_broken_is_failed() -> None:
    traj = trajectory(
        prompt("blank page"), edit(), bash("npm run build", "built"), prompt("still broken, same error")
    )
    assert judge_outcome(traj) is Outcome.FAILED


def test_complaint_before_a_new_edit_does_not_count() -> None:
    traj = trajectory(prompt("blank page"), edit(), prompt("still broken"), edit(), say("should be fixed"))
    assert judge_outcome(traj) is Outcome.UNVERIFIED


def test_earlier_failing_command_now_succeeding_is_verified() -> None:
    traj = trajectory(
        prompt("commit fails"),
        bash("git commit -m wip", "hook failed", exit_code=1),
        edit("/p/.lefthook.yml"),
        bash("git commit -m wip", "[main 1a2b3c4] wip"),
    )
    assert judge_outcome(traj) is Outcome.VERIFIED


def test_words_inside_a_commit_message_are_not_a_check() -> None:
    traj = trajectory(prompt("fix"), edit(), bash('git commit -m "make tests pass"', "[main 1a2b3c4]"))
    assert judge_outcome(traj) is Outcome.UNVERIFIED


def test_shell_write_counts_as_edit() -> None:
    traj = trajectory(prompt("fix"), bash("go test ./...", "ok"), bash("sed -i 's/a/b/' main.go"))
    assert judge_outcome(traj) is Outcome.UNVERIFIED


def test_formatter_after_passing_check_keeps_it_verified() -> None:
    traj = trajectory(prompt("fix"), edit(), bash("go test ./...", "ok"), bash("mise run fmt", ""))
    assert judge_outcome(traj) is Outcome.VERIFIED


def test_write_then_check_in_one_command() -> None:
    passing = trajectory(prompt("fix"), bash("sed -i 's/a/b/' main.go && go test ./...", "ok  pkg 0.1s"))
    assert judge_outcome(passing) is Outcome.VERIFIED
    check_first = trajectory(prompt("fix"), bash("go test ./... && sed -i 's/a/b/' main.go", "ok"))
    assert judge_outcome(check_first) is Outcome.UNVERIFIED


def test_failed_and_rejected_edits_are_not_applied() -> None:
    traj = trajectory(
        prompt("fix"), edit(), bash("cargo test", "test result: ok"), edit(is_error=True), edit(rejected=True)
    )
    assert judge_outcome(traj) is Outcome.VERIFIED


def test_doc_edit_after_verified_code_keeps_it_verified() -> None:
    traj = trajectory(
        prompt("fix"), edit(), bash("mix test", "10 tests, 0 failures"), edit("/p/docs/PLAN.md")
    )
    assert judge_outcome(traj) is Outcome.VERIFIED


def test_events_rebuilt_from_tool_calls_when_missing() -> None:
    traj = trajectory(prompt("fix"), edit(), bash("pytest", "1 passed"))
    traj = traj.model_copy(update={"events": []})
    assert judge_outcome(traj) is Outcome.VERIFIED


# ------------------------------------------------------------------ enforce_card


def test_enforce_downgrades_unsupported_verified() -> None:
    traj = trajectory(prompt("fix"), edit(), say("should work now"))
    enforced, notes = enforce_card(card(), traj)
    assert enforced.outcome is Outcome.UNVERIFIED
    assert notes and "verified -> unverified" in notes[0]


def test_enforce_without_trajectory_downgrades_verified() -> None:
    enforced, notes = enforce_card(card(), None)
    assert enforced.outcome is Outcome.UNVERIFIED and notes


@pytest.mark.parametrize("claimed", [Outcome.UNVERIFIED, Outcome.FAILED, Outcome.INFORMATIONAL])
def test_enforce_never_upgrades(claimed: Outcome) -> None:
    traj = trajectory(prompt("fix"), edit(), bash("pytest", "5 passed"))
    assert judge_outcome(traj) is Outcome.VERIFIED
    enforced, notes = enforce_card(card(outcome=claimed), traj)
    assert enforced.outcome is claimed and notes == []


def test_enforce_keeps_supported_verified() -> None:
    traj = trajectory(prompt("fix"), edit(), bash("pytest", "5 passed"))
    enforced, notes = enforce_card(card(), traj)
    assert enforced.outcome is Outcome.VERIFIED and notes == []


def test_enforce_raises_on_violations() -> None:
    with pytest.raises(InvalidCardError, match=r"insight: stack trace"):
        enforce_card(card(insight="Traceback (most recent call last): boom"), None)


# ------------------------------------------------------------------ parse_card_payload

GOOD = {
    "problem": "CI fails on lint while local checks pass",
    "steps": ["Ran the checks locally"],
    "key_decisions": [],
    "insight": "CI merged the main branch first",
    "dead_ends": [],
    "misleading_intuitions": [],
    "critical_checks": [],
    "outcome": "verified",
    "tags": ["ci"],
}


def test_parse_plain_json_and_dict() -> None:
    assert parse_card_payload(json.dumps(GOOD)).problem == GOOD["problem"]
    assert parse_card_payload(dict(GOOD)).outcome is Outcome.VERIFIED


def test_parse_fenced_json() -> None:
    parsed = parse_card_payload("```json\n" + json.dumps(GOOD, indent=2) + "\n```")
    assert parsed.tags == ["ci"]


def test_parse_json_with_prose_around_it() -> None:
    assert parse_card_payload("Here is the card:\n" + json.dumps(GOOD) + "\nDone.").insight


def test_parse_rejects_extra_field() -> None:
    with pytest.raises(InvalidCardError, match="Additional properties"):
        parse_card_payload({**GOOD, "confidence": 0.9})


def test_parse_rejects_missing_field() -> None:
    payload = {k: v for k, v in GOOD.items() if k != "insight"}
    with pytest.raises(InvalidCardError, match="'insight' is a required property"):
        parse_card_payload(payload)


def test_parse_rejects_wrong_enum() -> None:
    with pytest.raises(InvalidCardError, match="at outcome"):
        parse_card_payload({**GOOD, "outcome": "done"})


def test_parse_rejects_bad_json_and_non_objects() -> None:
    with pytest.raises(InvalidCardError, match="not valid JSON"):
        parse_card_payload('{"problem": ')
    with pytest.raises(InvalidCardError, match="JSON object"):
        parse_card_payload("[1, 2]")


def test_parse_rejects_too_long_lists() -> None:
    with pytest.raises(InvalidCardError, match="at steps"):
        parse_card_payload({**GOOD, "steps": [f"step {i}" for i in range(20)]})


def test_one_walk_of_the_calls_gives_what_each_walk_of_the_events_gives() -> None:
    events = [
        prompt("fix it"), bash("go test ./...", "FAIL x", exit_code=1), say("the cause is x"), edit(),
        bash("go test ./...", "ok"), edit(is_error=True), prompt("still broken"), bash("make lint"), edit(),
    ]  # fmt: skip
    calls = tool_calls_in(events)
    for position in range(len(events) + 1):
        assert calls_before(calls, position) == tool_calls_in(events[:position])
    assert last_edit_position(events, calls) == last_edit_position(events)
    for start in range(len(events)):
        assert evidence_after(events, start, calls) == evidence_after(events, start)
