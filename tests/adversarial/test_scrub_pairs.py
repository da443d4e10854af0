"""Issue 40: rules that cannot eat each other. Any two secrets of any kinds (every shape of `secret_shapes`,
every catalogue token of `secret_kit`, every true example of the generated Nosey Parker rows) planted next to
each other with any separator (newline, escaped newline, space, quote, `=`, table border) are both gone after
scrubbing, as plain text, JSON-escaped and inside a JSON object as harvest and the index see it. The shared
scrubber is what every flow calls; `test_scrub_shapes` plants pairs through each flow end to end."""

from __future__ import annotations

import base64
import json
import re
from functools import cache
from importlib import resources

from episodic.scrub import default_scrubber
from episodic.scrub.noseyparker import secret_span
from episodic.scrub.values import is_placeholder
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from kits.secret_shapes import AWS_LETTERS_HEAD, SEPARATORS, pool

AZURE_DEVOPS_PAT = "6RtqHqPc66Y6DYbkydbrrFJTYnRoA7r40ts7LWS2SkINSFsRABxhJQQJ99BFACAAAAALGcqjAAASAZDO3eqU"


@cache
def _catalogue_examples() -> list[tuple[str, tuple[str, ...]]]:
    """The Nosey Parker rows' true examples, each with the secret its rule names."""
    files = resources.files("episodic.scrub").joinpath("data")
    rules = json.loads(files.joinpath("noseyparker_rules.json").read_text())["rules"]
    examples = json.loads(files.joinpath("noseyparker_examples.json").read_text())["examples"]
    found = []
    for row in rules:
        for encoded in examples[row["id"]]["examples"]:
            example = base64.b64decode(encoded).decode()
            match = re.search(row["pattern"], example)
            secret = example[slice(*secret_span(match, row["groups"]))] if match else ""
            if len(secret) >= 12 and not is_placeholder(secret) and "\n" not in example:
                found.append((example, (secret,)))
    return found


def _items() -> list[tuple[str, tuple[str, ...]]]:
    return pool() + _catalogue_examples()


def _survivors(text: str, cores: tuple[str, ...]) -> list[str]:
    scrubber = default_scrubber()
    plain = scrubber.scrub(text)
    escaped = scrubber.scrub(json.dumps(text)[1:-1])
    as_json = json.dumps(scrubber.scrub_obj({"type": "user", "message": {"content": text}}))
    left = [core for core in cores if core in plain or json.dumps(core)[1:-1] in escaped]
    return left + [core for core in cores if json.dumps(core)[1:-1] in as_json]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@example(  # found by a CI run: a Dockerfile's line continuation, a literal `\n`, the whole JSON-escaped
    first=(
        'ENV SLACK_TOKEN="xapp-083452001657-ShAYwge/87H4lC3j7lZ48pAL" \\',
        ("xapp-083452001657-ShAYwge/87H4lC3j7lZ48pAL",),
    ),
    second=(AZURE_DEVOPS_PAT, (AZURE_DEVOPS_PAT,)),
    separator="\\n",
    prose="",
)
@example(  # found by a random draw: a prose password whose one-word value is an AWS key's name, the key wrapped
    first=("REACT_APP_MAILER_PASSWORD=smtp_password # Enter your SMTP email password", ("smtp_password",)),
    second=(
        "aws_secret_access_key=UhFfb7rOyO8KiH76x7ur\nYb4kOORP5LTsYHL0t957\nregion = eu-west-1",
        ("UhFfb7rOyO8KiH76x7ur", "Yb4kOORP5LTsYHL0t957"),
    ),
    separator=" ",
    prose="",
)
@example(  # found by a random draw: a long base64 value glued by `=` to the next assignment's name
    first=next(item for item in _items() if item[0].startswith("PRIVATE_KEY_B64=")),
    second=next(item for item in _items() if item[0].startswith('SMTP_PASSWORD="ab(')),
    separator="=",
    prose="see ",
)
@example(  # the same, with the next name's `=` after a space
    first=next(item for item in _items() if item[0].startswith("PRIVATE_KEY_B64=")),
    second=next(item for item in _items() if item[0].startswith("SECRET_KEY = 'django-insecure-k9")),
    separator="=",
    prose="the values: ",
)
@example(  # found by a random draw: a split AWS secret's rest glued by `=` to the next text
    first=next(item for item in _items() if item[0].startswith("aws_secret_access_key=" + AWS_LETTERS_HEAD)),
    second=next(item for item in _items() if item[0].startswith("the token was eyJ")),
    separator="=",
    prose="",
)
@given(
    first=st.sampled_from(_items()),
    second=st.sampled_from(_items()),
    separator=st.sampled_from(SEPARATORS),
    prose=st.sampled_from(["", "see ", "the values: "]),
)
def test_no_two_secrets_side_by_side_survive(
    first: tuple[str, tuple[str, ...]],
    second: tuple[str, tuple[str, ...]],
    separator: str,
    prose: str,
) -> None:
    text = prose + first[0] + separator + second[0]
    assert _survivors(text, first[1] + second[1]) == [], text
    assert default_scrubber().internal_errors == 0
