"""The viewer's text rules without a browser: a card's heading, the confidence labels, a dream record's
markdown as HTML (raw HTML escaped, unsafe links refused, citations linked to their episodes)."""

from __future__ import annotations

import pytest
from episodic.dream.record import read_record_file
from episodic.kernel.models import Confidence
from episodic.ui.render import (
    CONFIDENCE_LABELS,
    card_heading,
    home_relative,
    listing_order,
    record_html,
    record_title,
)

# (a stored problem, its heading): real shapes of heuristic and LLM problems
HEADINGS = [
    (
        "Update go in all the right places to 1.25.6. Updated Go version in both files.",
        "Update go in all the right places to 1.25.6.",
    ),
    (
        "## Summary\n\nThe hook blocks even with --no-verify.\nMore context here.",
        "The hook blocks even with --no-verify.",
    ),
    ("Login fails; the cookie is never kept.", "Login fails; the cookie is never kept."),
    (
        "The export job\ntimes out after the upgrade. It used to work.",
        "The export job times out after the upgrade.",
    ),
    ("- Fix the flaky export test in CI\n- then the docs", "Fix the flaky export test in CI"),
]


@pytest.mark.parametrize(("problem", "heading"), HEADINGS)
def test_a_heading_is_the_first_sentence_of_the_problem(problem: str, heading: str) -> None:
    assert card_heading(problem) == heading


def test_a_long_first_sentence_is_cut_at_a_word() -> None:
    problem = "The export " + "job times out again " * 20 + "after the upgrade. Second sentence."
    heading = card_heading(problem)
    assert len(heading) <= 121 and heading.endswith("…") and not heading.endswith(" …")
    assert problem.startswith(heading[:-1])


def test_every_tier_has_a_label_and_says_what_the_agent_gets() -> None:
    assert {label.tier for label in CONFIDENCE_LABELS.values()} == {"strong", "weak", "faint", "below"}
    assert set(CONFIDENCE_LABELS) == {*Confidence, None}


RECORD = """---
week: 2026-W11
period: 2026-03-09 to 2026-03-15
sessions_analysed: 3
---

## Narrative of the Week
The week's work was about **exports** <script>alert(1)</script> [abcdef12 2026-03-10] [zzzzzzzz 2026-03-11]
[a link](javascript:alert(1))

## Sessions Cited
- abcdef12 abcdef12-0000-4000-8000-000000000001
"""


def test_a_record_is_html_with_raw_html_escaped_and_citations_linked() -> None:
    record = read_record_file("2026-W11.md", RECORD)
    html = str(record_html(record))
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert 'href="javascript:' not in html
    assert "<strong>exports</strong>" in html and "<h2>Narrative of the Week</h2>" in html
    assert (
        '<a class="cite" href="/episode/abcdef12-0000-4000-8000-000000000001">[abcdef12 2026-03-10]</a>'
        in html
    )
    assert "[zzzzzzzz 2026-03-11]" in html and "/episode/zzzzzzzz" not in html  # not a cited session: text
    assert '<details class="appendix"><summary>Sessions Cited and run checks</summary>' in html
    assert "week: 2026-W11" not in html  # the front matter is the table, not the body
    assert record_title(record) == "Week 2026-W11 · 3 sessions"


def test_a_json_record_is_shown_as_text() -> None:
    record = read_record_file("w.json", '{"title": "Week <b>11</b>", "week": "2026-W11"}')
    html = str(record_html(record))
    assert html.startswith("<pre>") and "&lt;b&gt;" in html


def test_a_weeks_files_are_listed_record_first_under_what_they_are() -> None:
    files = {
        "2026-W10.survey.md": "# Survey 2026-W10\n",
        "2026-W11.synthesis.md": "---\nweek: 2026-W11\ntype: dreaming-synthesis\n---\n",
        "2026-W10.md": "---\nweek: 2026-W10\nsessions_analysed: 4\n---\n",
        "2026-W11.md": "---\nweek: 2026-W11\nsessions_analysed: 3\n---\n",
    }
    listed = listing_order([read_record_file(name, text) for name, text in files.items()])
    assert [record_title(r) for r in listed] == [
        "Week 2026-W11 · 3 sessions",
        "Week 2026-W11 · hand-off synthesis",
        "Week 2026-W10 · 4 sessions",
        "Week 2026-W10 · survey",
    ]


# (a path, the user's home, how the viewer shows it)
SHOWN_FROM_HOME = [
    ("/home/ana/.episodic/index.sqlite3", "/home/ana", "~/.episodic/index.sqlite3"),
    ("/home/ana", "/home/ana/", "~"),
    ("/home/anabel/.episodic/index.sqlite3", "/home/ana", "/home/anabel/.episodic/index.sqlite3"),
    ("/srv/episodic/index.sqlite3", "/home/ana", "/srv/episodic/index.sqlite3"),
    ("/home/ana/x", None, "/home/ana/x"),
]


def test_a_path_under_the_home_is_shown_from_tilde() -> None:
    assert [home_relative(path, home) for path, home, _ in SHOWN_FROM_HOME] == [
        s for *_, s in SHOWN_FROM_HOME
    ]
