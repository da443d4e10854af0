"""Docstrings and comments say why in a line: no round tags, no README sections, no essays at the top of a module.

Figures and their history belong in `docs/` (retrieval.md, performance.md, evaluation.md), where they are kept
current; a tag such as "issue 49" or "this round" names a moment, not a reason."""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
SOURCES = (REPO / "shared" / "episodic", REPO / "scripts", REPO / "lambdas", REPO / "stacks")
ORDINALS = (
    "first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|last|previous|next"
)
NUMBERS = "one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|\\d+"
ROUND_TAG = re.compile(
    rf"\bissues?\s*#?\d+|\bround[ -]({NUMBERS})\b|\b(this|that|{ORDINALS}) round\b(?! trip)", re.IGNORECASE
)
README_SECTION = re.compile(r"README(?:'s)?\s*(?:\"[^\"]+\"|section|\))|see (?:the )?README\b", re.IGNORECASE)
DOCS_PAGE = re.compile(r"\bdocs/([\w-]+\.md)")
MAX_MODULE_DOCSTRING_LINES = 12
# module docstrings over the limit, each with the reason it is the one place for what it holds
LONG_DOCSTRINGS = {
    "episodic/distill/checks.py": "the card rules and the outcome rule: docs/card.md quotes this text",
    "episodic/aws/bedrock_reranker.py": "the API's documented limits and how its score meets the tiers, one list",
    "episodic/plumbing/http_clients.py": "the servers' connection policy (deadline, caps, eviction order) in one place",
    "episodic/ui/security.py": "the viewer's defences, one item each: the threat model the tests plant against",
    "episodic/distill/heuristic.py": "what the offline distiller puts in each card field, one row a field",
    "episodic/dream/scoring.py": "the six signals and three gates of deep sleep with their weights",
    "episodic/sessions/scope.py": "the scope rules' sources and their precedence, the order a user reads",
    "episodic/distill/readability.py": "the readability verdicts, one definition each",
    "episodic/store/kept_trajectories.py": "the kept file's format and naming, which readers and writers must agree on",
    "episodic/hooks/failure_payloads.py": "each agent CLI's hook payload shape, one item an agent",
    "episodic/dream/card_extract.py": "where each field of a thread's extract comes from, one item a field",
    "episodic/cli/agent_hooks.py": "the table of hook moments per agent CLI",
    "episodic/cards/review.py": "the review's rules on re-index (what carries over a grown session and why)",
    "episodic/aws/dynamo_history.py": "why the deployed history store has this shape, and its key layout",
    "episodic/injections/uses.py": "the rules of what a session did with an injection, one row each",
}


def python_files() -> list[Path]:
    return sorted(path for root in SOURCES for path in root.rglob("*.py") if "node_modules" not in path.parts)


def label(path: Path) -> str:
    return str(
        path.relative_to(REPO / "shared") if path.is_relative_to(REPO / "shared") else path.relative_to(REPO)
    )


def test_no_round_tags() -> None:
    found = [
        f"{label(path)}:{number}: {line.strip()}"
        for path in python_files()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if ROUND_TAG.search(line)
    ]
    assert not found, "round tags name a moment, not a reason:\n" + "\n".join(found)


def test_no_readme_section_references() -> None:
    found = [
        f"{label(path)}:{number}: {line.strip()}"
        for path in python_files()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if README_SECTION.search(line)
    ]
    assert not found, "README sections move; name the docs/ page instead:\n" + "\n".join(found)


def test_docs_pages_named_exist() -> None:
    pages = {page.name for page in (REPO / "docs").glob("*.md")}
    found = [
        f"{label(path)}: docs/{name}"
        for path in python_files()
        for name in DOCS_PAGE.findall(path.read_text(encoding="utf-8"))
        if name not in pages
    ]
    assert not found, "a docs page named in the code does not exist:\n" + "\n".join(found)


def test_module_docstrings_are_short() -> None:
    """The package's modules; a script's docstring is its manual (usage and method), printed by its --help."""
    long = {}
    for path in python_files():
        if not path.is_relative_to(SOURCES[0]):
            continue
        docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")), clean=False)
        if docstring and docstring.strip().count("\n") + 1 > MAX_MODULE_DOCSTRING_LINES:
            long[label(path)] = docstring.strip().count("\n") + 1
    unexplained = {name: lines for name, lines in long.items() if name not in LONG_DOCSTRINGS}
    assert not unexplained, f"module docstrings over {MAX_MODULE_DOCSTRING_LINES} lines: {unexplained}"
    assert set(LONG_DOCSTRINGS) <= set(long), f"allowed but short now: {set(LONG_DOCSTRINGS) - set(long)}"


def test_the_checks_plant_violations() -> None:
    assert ROUND_TAG.search("# chosen in issue 49") and ROUND_TAG.search("measured this round")
    assert ROUND_TAG.search("(round six)") and not ROUND_TAG.search("one _msearch round trip")
    assert README_SECTION.search('see README "Injection"') and not README_SECTION.search(
        "README.md, the meta file"
    )
