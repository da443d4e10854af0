"""Regenerate the scrubber's catalogue rows from a pinned copy of Nosey Parker's rules (Apache-2.0).

    python scripts/gen_scrub_catalogue.py --repo PATH/TO/noseyparker [--commit SHA]

Reads every `crates/noseyparker/data/default/builtin/rules/*.yml` at the commit (a `git` directory, as the
`fetch` tool leaves it, or a checkout), mechanically and whole: each rule whose categories say `secret` and
not `generic` is translated from Rust regex syntax to Python's (verbose mode folded, POSIX classes spelled
out, global flags moved to the front), given trigger literals (the longest literal the pattern cannot match
without, lower-cased: the scrubber searches them in lower-cased text) and kept only if it compiles and
matches every one of the catalogue's own examples and none of its negative examples. What was left out is
listed with the reason in the data file. The scrubber redacts a rule's last capture group that is not a host
name (`user:password@host` in a connection string, `login … password …` in a `.netrc`), or the whole match
when the pattern has none; `window` and `back` are how far after and before a trigger a match may reach (twice what
the examples need, at least 128 characters after and 64 before). Rules triggered only by generic words
(GENERIC_TRIGGERS) are left out: they would run at every `token` of a transcript. Writes `shared/episodic/scrub/data/noseyparker_rules.json` (the
rules) and `noseyparker_examples.json` (the examples, base64: they look like secrets to other scanners).
"""

from __future__ import annotations

import argparse
import base64
import json
import re
import subprocess
from pathlib import Path
from typing import Any

import yaml

REPO_ROOT = Path(__file__).resolve().parents[1]
DATA = REPO_ROOT / "shared" / "episodic" / "scrub" / "data"
RULES_DIR = "crates/noseyparker/data/default/builtin/rules"
UPSTREAM = "https://github.com/praetorian-inc/noseyparker"
MIN_TRIGGER = 3  # a shorter literal would fire on most texts
# Generic words, not a provider's name or a token's prefix: found thousands of times per MB of ordinary
# transcripts (`token` is in every usage block), so a rule whose only triggers include one of them would run
# its regex at each; such names are the keyword rules' work (episodic.scrub.values), and the rule is left out.
GENERIC_TRIGGERS = frozenset(
    {"token", "key", "secret", "secret:", "session", "app", "api", "client", "application", "password", "pwd",
     "credentials", "production", "params", "bearer", "aws", "customer", "consumer", "personal", "bootstrap"}
)  # fmt: skip
POSIX = {
    "alnum": "a-zA-Z0-9", "alpha": "a-zA-Z", "digit": "0-9", "xdigit": "0-9a-fA-F", "upper": "A-Z",
    "lower": "a-z", "space": r"\s", "word": r"\w", "punct": r"!-/:-@\[-`{-~", "blank": r" \t",
}  # fmt: skip


def git_files(repo: Path, commit: str) -> dict[str, str]:
    names = subprocess.run(
        ["git", "--git-dir", str(repo), "ls-tree", "--name-only", f"{commit}:{RULES_DIR}"],
        check=True, capture_output=True, text=True,
    ).stdout.split()  # fmt: skip
    return {
        name: subprocess.run(
            ["git", "--git-dir", str(repo), "show", f"{commit}:{RULES_DIR}/{name}"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        for name in names
        if name.endswith(".yml")
    }


# ------------------------------------------------------------------ Rust regex -> Python regex


def fold_verbose(pattern: str) -> str:
    """The pattern without `(?x)` whitespace and comments (Rust ignores whitespace inside classes too)."""
    out: list[str] = []
    i, in_class = 0, False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            nxt = pattern[i + 1]
            out.append(nxt if nxt in " #" else c + nxt)  # `\ ` and `\#` are literal in verbose mode
            i += 2
            continue
        if in_class:
            if c == "]":
                in_class = False
            if not c.isspace():
                out.append(c)
            i += 1
            continue
        if c == "[":
            in_class = True
            out.append(c)
            if pattern[i + 1 : i + 2] == "^":
                out.append("^")
                i += 1
            if pattern[i + 1 : i + 2] == "]":
                out.append("]")
                i += 1
            i += 1
            continue
        if c == "#":
            end = pattern.find("\n", i)
            i = len(pattern) if end < 0 else end
            continue
        if not c.isspace():
            out.append(c)
        i += 1
    return "".join(out)


_FLAGS = re.compile(r"\(\?([imsx]+)\)")
# constructs Rust's regex runs in linear time that Python's backtracking `re` runs in polynomial time when a
# match fails (seconds on a padded PHP file): the same language, written so that each text splits one way
LINEAR = {
    r"(?:\s*.*\s*){0,3}": r"\s*(?:\S[^\n]*(?:\n\s*\S[^\n]*){0,2}\s*)?",  # up to 3 lines holding text
}


def to_python(pattern: str) -> str:
    pattern = re.sub(r"\(\?#[^)]*\)", "", pattern)
    flags = set()
    for match in _FLAGS.finditer(pattern):
        flags |= set(match.group(1))
    pattern = _FLAGS.sub("", pattern)
    if "x" in flags:
        pattern = fold_verbose(pattern)
        flags.discard("x")
    pattern = re.sub(r"\[:(\w+):\]", lambda m: POSIX.get(m.group(1), m.group()), pattern)
    pattern = re.sub(r"\\x\{([0-9A-Fa-f]{1,4})\}", lambda m: "\\u" + m.group(1).rjust(4, "0"), pattern)
    pattern = re.sub(r"\(\?<(?![=!])", "(?P<", pattern)
    pattern = pattern.replace(r"\z", r"\Z")
    for slow, linear in LINEAR.items():
        pattern = pattern.replace(slow, linear)
    return (f"(?{''.join(sorted(flags))})" if flags else "") + pattern


# ------------------------------------------------------------------ required literals


class _Parser:
    """Just enough of a regex parser to find literals every match must hold (a set: one of them must)."""

    def __init__(self, pattern: str) -> None:
        self.p = pattern
        self.i = 0

    def alternation(self) -> set[str] | None:
        branches = [self.sequence()]
        while self.i < len(self.p) and self.p[self.i] == "|":
            self.i += 1
            branches.append(self.sequence())
        if any(b is None for b in branches):
            return None
        return set().union(*branches)  # type: ignore[arg-type]

    def sequence(self) -> set[str] | None:
        candidates: list[set[str]] = []
        run = ""
        while self.i < len(self.p) and self.p[self.i] not in "|)":
            atom, literal = self.atom()
            optional, repeated = self.quantifier()
            if literal is not None and not optional and not repeated:
                run += literal
                continue
            if run:
                candidates.append({run})
            run = ""
            if literal is not None and not optional:
                candidates.append({literal})
            if atom and not optional:
                candidates.append(atom)
        if run:
            candidates.append({run})
        usable = [c for c in candidates if c]
        return max(usable, key=lambda c: (min(map(len, c)), -len(c))) if usable else None

    def quantifier(self) -> tuple[bool, bool]:
        if self.i >= len(self.p):
            return False, False
        c = self.p[self.i]
        optional = repeated = False
        if c in "?*":
            optional = True
            self.i += 1
        elif c == "+":
            repeated = True
            self.i += 1
        elif c == "{":
            end = self.p.index("}", self.i)
            low = self.p[self.i + 1 : end].split(",")[0] or "0"
            optional = int(low) == 0
            repeated = True
            self.i = end + 1
        else:
            return False, False
        if self.i < len(self.p) and self.p[self.i] in "?+":
            self.i += 1
        return optional, repeated

    def atom(self) -> tuple[set[str] | None, str | None]:
        """(the required literals of a group, or the one literal character this atom is)."""
        c = self.p[self.i]
        if c == "(":
            self.i += 1
            look = False
            if self.p.startswith("?P<", self.i):
                self.i = self.p.index(">", self.i) + 1
            elif self.p.startswith(("?=", "?!"), self.i):
                look, self.i = True, self.i + 2
            elif self.p.startswith(("?<=", "?<!"), self.i):
                look, self.i = True, self.i + 3
            elif self.p.startswith("?", self.i):
                self.i = self.p.index(":", self.i) + 1
            inner = self.alternation()
            self.i += 1  # ")"
            return (None if look else inner), None
        if c == "[":
            self.i += 1
            if self.p[self.i] == "^":
                self.i += 1
            if self.p[self.i] == "]":
                self.i += 1
            while self.p[self.i] != "]":
                self.i += 2 if self.p[self.i] == "\\" else 1
            self.i += 1
            return None, None
        if c == "\\":
            nxt = self.p[self.i + 1]
            self.i += 2
            if nxt.isalnum():
                if nxt == "u":
                    self.i += 4
                elif nxt == "x":
                    self.i += 2
                return None, None
            return None, (nxt if nxt not in "\"'" else None)
        self.i += 1
        if c in ".^$" or c.isspace() or c in "\"'`":
            return None, None
        return None, c.lower()


def triggers(pattern: str) -> list[str]:
    body = _FLAGS.sub("", re.sub(r"^\(\?[a-z]+\)", "", pattern))
    found = _Parser(body).alternation() or set()
    return sorted(found)


# ------------------------------------------------------------------ the rows


def slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def _reach(compiled: re.Pattern[str], example: str, literals: list[str]) -> tuple[int, int]:
    """How far before its trigger literal the example's match starts, and how far after it it ends."""
    match = compiled.search(example)
    if match is None:
        return 0, 0
    lowered = example.lower()
    at = [
        lowered.find(t, match.start()) for t in literals if 0 <= lowered.find(t, match.start()) < match.end()
    ]
    first = min(at) if at else match.start()
    return first - match.start(), match.end() - first


def build(files: dict[str, str]) -> tuple[list[dict[str, Any]], list[dict[str, str]], dict[str, Any]]:
    rules: list[dict[str, Any]] = []
    skipped: list[dict[str, str]] = []
    examples: dict[str, Any] = {}
    for name in sorted(files):
        for rule in yaml.safe_load(files[name]).get("rules", []):
            rid = rule["id"]
            categories = set(rule.get("categories") or [])
            if "secret" not in categories or "generic" in categories:
                skipped.append(
                    {"id": rid, "reason": f"categories {sorted(categories)}: not a secret of a format"}
                )
                continue
            python = to_python(rule["pattern"])
            try:
                compiled = re.compile(python)
            except re.error as exc:
                skipped.append({"id": rid, "reason": f"does not compile in Python: {exc}"})
                continue
            literals = [lit for lit in triggers(python) if lit]
            if not literals or min(map(len, literals)) < MIN_TRIGGER:
                skipped.append({"id": rid, "reason": f"no required literal of {MIN_TRIGGER}+ characters"})
                continue
            generic = sorted(set(literals) & GENERIC_TRIGGERS)
            if generic:
                skipped.append({"id": rid, "reason": f"triggered only with generic words {generic}"})
                continue
            positives = list(rule.get("examples") or [])
            negatives = list(rule.get("negative_examples") or []) + list(rule.get("non_examples") or [])
            missed = [
                e for e in positives if not compiled.search(e) or not any(t in e.lower() for t in literals)
            ]
            wrong = [e for e in negatives if compiled.search(e)]
            if missed or wrong:
                skipped.append(
                    {"id": rid, "reason": f"{len(missed)} examples missed, {len(wrong)} negatives hit"}
                )
                continue
            reach = [_reach(compiled, e, literals) for e in positives]
            back = max((r[0] for r in reach), default=0)
            ahead = max((r[1] for r in reach), default=0)
            rules.append(
                {"id": rid, "name": rule["name"], "kind": slug(rule["name"]), "pattern": python,
                 "triggers": literals, "groups": compiled.groups, "window": min(65536, max(128, 2 * ahead)),
                 "back": min(65536, max(64, 2 * back))}
            )  # fmt: skip
            examples[rid] = {
                "examples": [base64.b64encode(e.encode()).decode() for e in positives],
                "negative_examples": [base64.b64encode(e.encode()).decode() for e in negatives],
            }
    return rules, skipped, examples


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repo", type=Path, required=True, help="Nosey Parker's git directory")
    parser.add_argument("--commit", default="HEAD")
    parser.add_argument("--out", type=Path, default=DATA, help="where the two data files go")
    args = parser.parse_args()
    commit = subprocess.run(
        ["git", "--git-dir", str(args.repo), "rev-parse", args.commit],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    rules, skipped, examples = build(git_files(args.repo, commit))
    source = {
        "catalogue": "Nosey Parker built-in rules",
        "upstream": UPSTREAM,
        "commit": commit,
        "path": RULES_DIR,
        "license": "Apache-2.0 (Copyright Praetorian Security, Inc.); see NOTICE-noseyparker.txt",
        "generated_by": "scripts/gen_scrub_catalogue.py",
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "noseyparker_rules.json").write_text(
        json.dumps({"source": source, "rules": rules, "skipped": skipped}, indent=1) + "\n"
    )
    (args.out / "noseyparker_examples.json").write_text(
        json.dumps({"source": source, "examples": examples}, indent=1) + "\n"
    )
    print(f"{len(rules)} rules taken, {len(skipped)} left out (reasons in the data file), commit {commit}")


if __name__ == "__main__":
    main()
