"""The heuristic distiller on hand-made trajectories: every field filled, every rule kept."""

from __future__ import annotations

from episodic.distill.checks import card_violations
from episodic.distill.heuristic import HeuristicDistiller
from episodic.distill.heuristic_text import safe_line
from episodic.kernel.models import Outcome
from kits.distill_builders import bash, edit, prompt, say, tool, trajectory

DEBUG_SESSION = trajectory(
    prompt(
        "The CI lint job fails on my PR with Biome errors in files I never touched, but `npm run check` "
        "passes locally.\n```\n> biome check .\napp/lib/auth.server.ts:12:5 lint/style/useConst\n```"
    ),
    say("I suspect the Biome version differs between CI and local."),
    tool("Read", "/home/dev/proj/.github/workflows/ci.yml"),
    tool("Read", "/home/dev/proj/biome.json"),
    bash(
        "npm run check",
        "Checked 120 files\nerror: Found 3 lint errors in code this branch never changed, at 0xdeadbeef",
        exit_code=1,
        description="Run the full check",
    ),
    say("Actually the versions match. The real issue is that CI checks out a merge commit with main."),
    prompt("hmm, it still fails on CI with the same lint errors"),
    say("I'll rebase the branch instead of merging main, rather than disabling the rule."),
    edit("/home/dev/proj/app/lib/auth.server.ts"),
    edit("/home/dev/proj/biome.json"),
    bash("git push --force-with-lease", "rejected", exit_code=1, description="Push the rebased branch"),
    bash("npm run check", "Checked 120 files in 80ms. No fixes applied."),
    say("The root cause was that CI lints the merge with main, because main had new lint errors."),
    titles=["CI lint failures from merged main"],
)


def test_debug_session_card_fields() -> None:
    result = HeuristicDistiller().distill(DEBUG_SESSION, survey="")
    card = result.card
    assert card_violations(card) == []
    assert card.outcome is Outcome.VERIFIED
    assert "CI lint job fails" in card.problem
    assert "CI lint failures from merged main" in card.problem
    assert "Symptom: " in card.problem and "0xdeadbeef" not in card.problem
    assert "/home/dev" not in card.problem and "auth.server.ts:12" not in card.problem
    assert "still fails on CI" in card.problem  # a later prompt restating the symptom
    assert any(s.startswith("Read ci.yml, biome.json") for s in card.steps)
    assert any("failed" in s and "npm run check" in s for s in card.steps)
    assert card.steps[-1] == "Ran npm run check: passed"
    assert "Rebase the branch instead of merging main, rather than disabling the rule." in card.key_decisions
    assert "root cause" in card.insight.lower()
    assert any("Biome version differs" in m for m in card.misleading_intuitions)
    # a failed command is a step, not a dead end: "Tried to push the rebased branch, it failed" says nothing learnt
    assert not any("push the rebased branch" in d.lower() for d in card.dead_ends)
    assert any("push the rebased branch: failed" in s.lower() for s in card.steps)
    assert card.critical_checks[-1] == "Final check: npm run check passed"
    assert any("changed the course" in c for c in card.critical_checks)
    assert {"ci", "biome", "npm", "typescript"} <= set(card.tags)
    assert all(t == t.lower() for t in card.tags) and len(card.tags) <= 12
    assert result.usage.duration_ms >= 0


def test_question_session_is_informational() -> None:
    traj = trajectory(
        prompt("How does the retry queue decide when to give up? Explain the backoff."),
        tool("Grep", pattern="retry"),
        tool("Read", "/srv/app/queue/retry.py"),
        say("The queue gives up after five attempts because the backoff cap is reached."),
    )
    card = HeuristicDistiller().distill(traj, survey="").card
    assert card.outcome is Outcome.INFORMATIONAL
    # what the session found is the insight; the problem, the question as asked: no sentence in both
    assert card.insight.startswith("The queue gives up after five attempts")
    assert card.problem == "How does the retry queue decide when to give up? Explain the backoff."
    assert card.steps == ["Read retry.py"]
    assert "python" in card.tags
    assert card_violations(card) == []


def test_hedged_session_is_unverified() -> None:
    traj = trajectory(
        prompt("the modal never closes on mobile"), edit("/w/src/Modal.tsx"), say("This should fix it.")
    )
    card = HeuristicDistiller().distill(traj, survey="").card
    assert card.outcome is Outcome.UNVERIFIED
    assert card.critical_checks == []


def test_slash_command_request_uses_its_arguments() -> None:
    request = (
        "<command-message>orchestrator is running…</command-message>\n<command-name>/orchestrator</command-name>\n"
        "<command-args>build a TODO app with Next.js and Tailwind</command-args>"
    )
    card = HeuristicDistiller().distill(trajectory(prompt(request)), survey="").card
    assert "build a TODO app with Next.js and Tailwind" in card.problem
    assert "command-name" not in card.problem
    assert {"next.js", "tailwind"} <= set(card.tags)


def test_code_heavy_text_never_breaks_the_rules() -> None:
    noisy = (
        "def handler(event):\n    return json.loads(event['body'])\n"
        'Traceback (most recent call last):\n  File "/srv/app/main.py", line 3, in <module>\n'
        "See /srv/app/main.py and src/app/util.py; run `cat x | grep -v y` then `x := f()`."
    )
    traj = trajectory(
        prompt(noisy),
        say(noisy + " I decided to use a schema instead of raw parsing at src/app/util.py:10."),
        bash("python -m pytest -x", noisy, exit_code=1),
        edit("/srv/app/main.py"),
        bash("python -m pytest -x", "2 passed"),
        say(noisy + " The issue was that the body is base64 encoded because of the proxy."),
    )
    card = HeuristicDistiller().distill(traj, survey="").card
    assert card_violations(card) == []
    assert card.problem
    assert card.outcome is Outcome.VERIFIED


def test_empty_trajectory_still_gets_a_valid_card() -> None:
    card = HeuristicDistiller().distill(trajectory(), survey="").card
    assert card.problem and card_violations(card) == []
    assert card.outcome is Outcome.INFORMATIONAL


def test_long_sessions_respect_field_limits() -> None:
    events = [prompt("flaky integration test " * 60)]
    for i in range(40):
        events += [
            say(f"I'll switch to approach {i} instead of the previous one, since it failed again. " * 3),
            bash("go test ./...", "--- FAIL: TestFlaky", exit_code=1),
            edit(f"/r/pkg/f{i}.go"),
        ]
    card = HeuristicDistiller().distill(trajectory(*events), survey="").card
    assert len(card.problem) <= 600 and len(card.insight) <= 600
    assert len(card.steps) <= 12 and len(card.key_decisions) <= 8 and len(card.critical_checks) <= 6
    assert card.outcome is Outcome.UNVERIFIED
    assert card_violations(card) == []


def test_todo_completions_become_steps() -> None:
    todos = [{"content": "Fix the date parsing in the importer", "status": "completed"}]
    traj = trajectory(prompt("imports drop rows"), tool("TodoWrite", todos=todos), edit())
    card = HeuristicDistiller().distill(traj, survey="").card
    assert "Done: Fix the date parsing in the importer" in card.steps


def test_safe_line_turns_paths_into_base_names() -> None:
    assert (
        safe_line("edited /Users/me/proj/src/app.ts and lib/util/strings.go")
        == "edited app.ts and strings.go"
    )
    assert safe_line("see `npm run check` output") == "see npm run check output"
    assert safe_line("**Step 4:** fix it") == "Step 4: fix it"
    assert safe_line("```\nx := 1\n```") == ""


def test_pointer_request_takes_the_problem_from_the_ticket_and_the_diagnosis() -> None:
    ticket = (
        "○ proj-abc [EPIC] · Settings page loses unsaved edits   [● P1 · OPEN]\nOwner: Dev · Type: epic\n\n"
        "DESCRIPTION\n## Problem\nSwitching tabs on the settings page silently throws away what the user typed.\n"
        "## Output Files\n- `lib/settings_live.ex`\n"
    )
    traj = trajectory(
        prompt("Work on bead proj-abc. Run bd show proj-abc to see the issue details."),
        bash("bd show proj-abc", ticket),
        say("The problem is that handleTabChange resets the form state because the draft is never stored."),
        edit("/w/lib/settings_live.ex"),
        bash("mix test", "10 tests, 0 failures"),
        bash("mix test", "10 tests, 0 failures"),
        edit("/w/lib/settings_live.ex"),
        bash("mix test", "10 tests, 0 failures"),
        prompt("Author: Someone <someone@example.com>\nUse a subagent: make me a file about the colour red"),
    )
    card = HeuristicDistiller().distill(traj, survey="").card
    # the problem as the session came to understand it (the ticket, the diagnosis), then what was asked
    assert card.problem.startswith("Settings page loses unsaved edits.")
    assert card.problem.endswith("Asked: Work on bead proj-abc.")
    assert "Run bd show" not in card.problem  # a pointer request keeps its first sentence only
    assert "Settings page loses unsaved edits" in card.problem
    assert "silently throws away what the user typed" in card.problem
    # the diagnosis, a why, is the insight's alone, with the code name it cannot do without (never a hole)
    assert "resets the form state because the draft is never stored" not in card.problem
    assert "is that handleTabChange resets the form state because the draft is never stored" in card.insight
    assert "colour red" not in card.problem and "example.com" not in card.problem
    assert card.steps.count("Ran mix test: passed") == 1  # a repeated passing check is shown once
    assert card_violations(card) == []


def test_later_prompt_adds_only_its_symptom_sentences() -> None:
    traj = trajectory(
        prompt("can you review the changes in this branch?"),
        say("Looks fine overall."),
        prompt("Thanks for looking.\nThe export button still does nothing when the list is empty."),
    )
    card = HeuristicDistiller().distill(traj, survey="").card
    assert "export button still does nothing" in card.problem
    assert "Thanks for looking" not in card.problem


def test_insight_skips_line_number_noise() -> None:
    traj = trajectory(
        prompt("the cache never expires"),
        edit(),
        say(
            "At line 289 the issue is that the ttl is ignored. The root cause is that the ttl is read in seconds."
        ),
    )
    card = HeuristicDistiller().distill(traj, survey="").card
    assert "289" not in card.insight and "read in seconds" in card.insight


def test_a_final_check_always_has_a_name() -> None:
    from pathlib import Path

    from episodic.parse.claude_code import ClaudeCodeSource
    from episodic.scrub import default_scrubber

    demo = Path(__file__).resolve().parents[3] / "shared" / "episodic" / "demo"
    source = ClaudeCodeSource(default_scrubber(), roots=[])
    checks = [
        check
        for found in source.discover([str(demo)])
        for check in HeuristicDistiller().distill(source.load(found), "").card.critical_checks  # type: ignore[arg-type]
    ]
    finals = [c for c in checks if c.startswith("Final check:")]
    assert len(finals) == 5 and all(not c.startswith("Final check:  ") for c in finals)
