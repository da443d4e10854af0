"""Rules for secrets with no name beside them: a bare AWS secret key, credential-named URL
query parameters (`?key=`, `&sig=`, `X-Amz-Signature=`), and base64 blobs that decode to a secret (found by
the base64 forms of secret prefixes, at each of the three byte alignments).

Each stays specific: a run of exactly 40 base64 characters counts with mixed case and digits (never a git
SHA) and 3.5 bits/char within reach of an `AKIA…` id (or later in its session), 4.3 anywhere else; a query
value only after `?` or `&` and with entropy (percent-decoded); a blob only when its decoded text holds a
secret the other rules find.
"""

from __future__ import annotations

import base64
import binascii
import re
from urllib.parse import unquote

from episodic.scrub.rules import RANK_CONTEXT, RANK_TOKEN, Span
from episodic.scrub.values import is_placeholder, shannon_entropy

# ---------------------------------------------------------------- AWS secret beside its key id

AWS_PAIR_REACH = 200  # characters either side of the access key id (`aws configure`, a CSV row, JSON)
_AWS_SECRET_RUN = re.compile(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")
_AWS_SECRET_SPLIT = re.compile(
    r"(?:(?<![A-Za-z0-9/+=\\])|(?<=\\[nrt]))(?P<head>[A-Za-z0-9/+]{4,36})[ \t]*(?:\\{1,3}[nr]|\r?\n)[ \t]*"
    r"(?P<tail>[A-Za-z0-9/+]{4,36})(?![A-Za-z0-9/+])"
)


_AWS_ALPHABET = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789/+")
NEAR_KEY_ID_ENTROPY = 3.5  # beside (or in the session of) an access key id a looser shape suffices


def _aws_secret_shape(value: str, entropy: float = NEAR_KEY_ID_ENTROPY) -> bool:
    return (
        any(c.isupper() for c in value)
        and any(c.islower() for c in value)
        and any(c.isdigit() for c in value)
        and shannon_entropy(value) >= entropy
    )


def aws_secret_near(text: str, key_start: int, key_end: int) -> list[Span]:
    """Bare 40-character secrets within reach of an access key id found at [key_start, key_end)."""
    begin = max(0, key_start - AWS_PAIR_REACH)
    stop = min(len(text), key_end + AWS_PAIR_REACH)
    spans: list[Span] = []
    for match in _AWS_SECRET_RUN.finditer(text, begin, stop):
        if match.end() == stop and stop < len(text) and text[stop] in _B64_CHARS:
            continue  # cut by the window: part of a longer run
        if _aws_secret_shape(match.group()) and not is_placeholder(match.group()):
            spans.append((match.start(), match.end(), "aws-secret-key", RANK_TOKEN))
    # cut in two by a line break; searched on each side of the key id, which is never a secret's head
    # (`AKIA…⏎<20>⏎<20>` joined the id to the first half and left the second)
    for low, high in ((begin, key_start), (key_end, stop)):
        for match in _AWS_SECRET_SPLIT.finditer(text, low, high):
            value = match.group("head") + match.group("tail")
            if len(value) == 40 and _aws_secret_shape(value) and not is_placeholder(value):
                spans.append((match.start(), match.end(), "aws-secret-key", RANK_TOKEN))
    return spans


# ---------------------------------------------------------------- base64 runs: bare AWS secrets, Discord tokens

# Three rules read maximal runs of base64 characters (`A-Za-z0-9+/`) of BASE64_TEXT_MIN or more: a bare AWS secret,
# a Discord bot token and base64 of text (below). The shared transcripts hold ~248,000 such runs (paths, ids) and
# a few hundred pass any rule's first test, so the runs are found one of two ways with the same result: the trigger
# search reports candidates (RUN_PATTERNS, in C: each a necessary condition of one rule's test), or, with
# no Hyperscan, one `translate` marks base64 characters and `find` steps from run to run (`base64_runs`).
BARE_AWS_SECRET_ENTROPY = 4.3
_B64_RUN = bytes(0x61 if chr(i) in _AWS_ALPHABET else 0x20 for i in range(256))
_RUN_40 = b"a" * 40
_GLUED_AFTER, _GLUED_BEFORE = (b"=", b"-", b"_"), (b"-", b"_")
# a Discord bot token: base64 of the bot's numeric id (17-19 digits: 24-26 characters starting M, N or O), a
# timestamp and an HMAC
_DISCORD = re.compile(rb"[MNO][A-Za-z0-9]{23,25}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,38}(?![A-Za-z0-9_-])")
_B64 = "A-Za-z0-9+/"
_RUN_START = (
    rf"(?:^|[^{_B64}])"  # a run starts the text or follows another character (Hyperscan has no lookbehind)
)
RUN_PATTERNS = (
    rf"{_RUN_START}[{_B64}]{{40,41}}(?:[^{_B64}]|\z)",  # a bare AWS secret: 40, or `\n` and 40
    rf"{_RUN_START}[ntr]?[MNO][A-Za-z0-9]{{23,25}}\.[A-Za-z0-9_-]{{6}}\.[A-Za-z0-9_-]{{27}}",  # a Discord token
    rf"{_RUN_START}[ntr]?(?:[A-Za-f][{_B64}]{{3}}){{6}}",  # base64 of text: 6 groups that start like ASCII's
)
_RUN_REST = re.compile(rb"[A-Za-z0-9+/]{0,8194}")  # a longer run is too long for every rule


def base64_runs(data: bytes, marks: bytes) -> list[tuple[int, int]]:
    """(start, end) of every maximal base64 run of BASE64_TEXT_MIN characters or more; `marks`: `data`'s
    `translate(BASE64_MARKS)` (in C: a regex stepping through every character is far slower, docs/security.md)."""
    runs: list[tuple[int, int]] = []
    at = marks.find(_RUN_MIN)
    while at >= 0:
        end = marks.find(b" ", at)
        end = len(marks) if end < 0 else end
        runs.append((at, end))
        at = marks.find(_RUN_MIN, end)
    return runs


def candidate_runs(data: bytes, starts: list[int]) -> list[tuple[int, int]]:
    """(start, end) of the runs where RUN_PATTERNS matched, `starts` where those matches began (sorted)."""
    runs: list[tuple[int, int]] = []
    last = -1
    for found in starts:
        at = found if found == 0 and _B64_RUN[data[0]] == 0x61 else found + 1
        if at == last:
            continue
        last = at
        end = _RUN_REST.match(data, at).end()  # type: ignore[union-attr]
        if end - at <= BASE64_TEXT_MAX + 1:
            runs.append((at, end))
    return runs


def run_secrets(
    text: str, data: bytes, runs: list[tuple[int, int]], *, bare: bool, decode: bool
) -> tuple[list[Span], list[tuple[int, int, str]]]:
    """Bare AWS secrets and Discord tokens (when `bare`) in the runs, and (when `decode`) the runs that are
    base64 of printable text, with that text: byte offsets into `data`, the text's UTF-8 or ASCII form."""
    spans: list[Span] = []
    texts: list[tuple[int, int, str]] = []
    for at, end in runs:
        # a run glued after `\n` (a JSON escape) starts after it
        start = at + 1 if at >= 1 and data[at - 1] == 0x5C and data[at] in b"ntr" else at
        length = end - start
        if bare and length == 40:
            span = _aws_run(text, data, start, end, BARE_AWS_SECRET_ENTROPY)
            if span is not None:
                spans.append(span)
        elif bare and 24 <= length <= 26 and data[end : end + 1] == b".":
            span = _discord_run(text, data, start)
            if span is not None:
                spans.append(span)
        if decode and BASE64_TEXT_MIN <= length <= BASE64_TEXT_MAX:
            found = _text_run(data, start, end)
            if found is not None:
                texts.append(found)
    return spans, texts


def bare_aws_secrets(text: str, data: bytes, entropy: float = BARE_AWS_SECRET_ENTROPY) -> list[Span]:
    """Runs of exactly 40 base64 characters shaped like an AWS secret key, wherever they stand (`data`: the text's
    UTF-8)."""
    marks = data.translate(_B64_RUN)
    at = marks.find(_RUN_40)
    spans: list[Span] = []
    while at >= 0:
        end = marks.find(b" ", at)
        end = len(marks) if end < 0 else end
        start = at + 1 if at >= 1 and data[at - 1] == 0x5C and data[at] in b"ntr" else at
        if end - start == 40:
            span = _aws_run(text, data, start, end, entropy)
            if span is not None:
                spans.append(span)
        at = marks.find(_RUN_40, end)
    return spans


def _aws_run(text: str, data: bytes, start: int, end: int, entropy: float) -> Span | None:
    # `=` after it: a longer base64 value's end; `-`/`_` either side: part of a base64url token; a
    # placeholder after it stood for what it was glued to (`…-----BEGIN`): scrubbing twice equals once
    if (
        data[end : end + 1] in _GLUED_AFTER
        or data.startswith(b"[REDACTED:", end)
        or (start >= 1 and data[start - 1 : start] in _GLUED_BEFORE)
    ):
        return None
    if not _aws_secret_shape(data[start:end].decode("ascii"), entropy):
        return None
    if len(data) != len(text):  # map bytes to characters (a non-ASCII text's UTF-8)
        start = len(data[:start].decode("utf-8", "surrogatepass"))
    return start, start + 40, "aws-secret-key", RANK_TOKEN


def _discord_run(text: str, data: bytes, start: int) -> Span | None:
    if start > 0 and data[start - 1] in b"-_":
        return None
    match = _DISCORD.match(data, start)
    if match is None or not _has_cases_and_digit(match.group()):
        return None
    if len(data) != len(text):
        start = len(data[:start].decode("utf-8", "surrogatepass"))
    return start, start + match.end() - match.start(), "discord-bot-token", RANK_TOKEN


def _has_cases_and_digit(token: bytes) -> bool:
    return not (token.isupper() or token.islower()) and any(48 <= c <= 57 for c in token)


def redact_aws_secrets(text: str, entropy: float) -> tuple[str, int]:
    """`text` with every bare AWS-secret-shaped run of at least `entropy` bits/char redacted, and how many."""
    if len(text) < 40:
        return text, 0
    spans = bare_aws_secrets(text, text.encode("utf-8", "surrogatepass"), entropy)
    if not spans:
        return text, 0
    pieces: list[str] = []
    cursor = 0
    for start, end, kind, _rank in spans:
        pieces += [text[cursor:start], f"[REDACTED:{kind}]"]
        cursor = end
    return "".join(pieces) + text[cursor:], len(spans)


# ---------------------------------------------------------------- credential-named URL parameters

QUERY_LITERALS = ("key=", "sig=", "Signature=", "signature=")
_PARAM_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_QUERY_VALUE = re.compile(r"[A-Za-z0-9%._~+/=-]{16,2048}")


def url_query_secret(text: str, start: int) -> Span | None:
    """`?key=<40 hex>`, `&sig=…`, `X-Amz-Signature=<hex>`: the value goes; `start` is at the literal."""
    at = start
    floor = max(0, start - 64)
    while at > floor and text[at - 1] in _PARAM_NAME_CHARS:
        at -= 1
    if at == 0 or text[at - 1] not in "?&;":
        return None  # `sorted(key=…)`, `inspect.signature=`: not a URL parameter
    value_start = text.index("=", start) + 1
    match = _QUERY_VALUE.match(text, value_start)
    if match is None:
        return None
    value = match.group()
    # judged percent-decoded: an Azure SAS `sig=%2B…` starts with `%`, which alone reads as a format string
    plain = unquote(value) if "%" in value else value
    if is_placeholder(plain) or not any(c.isdigit() for c in value) or shannon_entropy(plain) < 3.0:
        return None
    return match.start(), match.end(), "secret", RANK_CONTEXT


# ---------------------------------------------------------------- base64 of a secret

# Prefixes a secret assignment or token starts with once decoded (five bytes or more, so the encoded
# literal has six characters or more and random base64 almost never holds it).
_BASE64_SECRET_PREFIXES = (
    b"TOKEN=", b"TOKEN:", b"SECRET", b"PASSWORD", b"_KEY=", b"token=", b"secret", b"password",
    b"glpat-", b"github_pat_", b"sk-ant-", b"sk-proj-", b"xoxb-", b"xoxp-", b"-----BEGIN",
    b"AKIA", b"ghp_", b"gho_",
)  # fmt: skip
_B64_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=-_")
BASE64_MAX_RUN = 64 * 1024  # a longer run (an image, a bundle) is decoded only around the hit
_DECODE_REACH = 1024


def _fixed_chars(prefix: bytes, offset: int, encode: object) -> str:
    """The base64 characters that depend only on `prefix` when it starts `offset` bytes into a group."""
    encoded = encode(b"\0" * offset + prefix).decode()  # type: ignore[operator]
    first = -(-8 * offset // 6)
    last = 8 * (offset + len(prefix)) // 6
    return str(encoded[first:last])


def base64_literals() -> list[str]:
    found: list[str] = []
    for prefix in _BASE64_SECRET_PREFIXES:
        for offset in range(3):
            for encode in (base64.b64encode, base64.urlsafe_b64encode):
                literal = _fixed_chars(prefix, offset, encode)
                if len(literal) >= 5 and literal not in found:
                    found.append(literal)
    return found


def base64_run(text: str, start: int, end: int) -> tuple[int, int]:
    """The base64 run around a hit [start, end), at most BASE64_MAX_RUN characters each way."""
    run_start = start
    floor = max(0, start - BASE64_MAX_RUN)
    while run_start > floor and text[run_start - 1] in _B64_CHARS:
        run_start -= 1
    run_end = end
    ceiling = min(len(text), end + BASE64_MAX_RUN)
    while run_end < ceiling and text[run_end] in _B64_CHARS:
        run_end += 1
    return run_start, run_end


def decode_around(text: str, run_start: int, run_end: int, hit: int) -> str | None:
    """The decoded text near the hit (every alignment tried), or None when it is not text."""
    begin = max(run_start, hit - _DECODE_REACH)
    begin -= (begin - run_start) % 4  # whole groups from the run's start
    chunk = text[begin : min(run_end, hit + _DECODE_REACH)].rstrip("=")
    for shift in range(4):
        piece = chunk[shift:]
        piece = piece[: len(piece) - len(piece) % 4]
        if len(piece) < 8:
            continue
        for decode in (base64.b64decode, base64.urlsafe_b64decode):
            try:
                raw = decode(piece)
            except (binascii.Error, ValueError):
                continue
            decoded = raw.decode("utf-8", "replace")
            printable = sum(c.isprintable() or c in "\n\r\t" for c in decoded)
            if printable >= 0.9 * len(decoded):
                return decoded
    return None


# ---------------------------------------------------------------- any base64 run that decodes to text

# a base64 blob holding a Stripe key, an npm token or a whole `.env` carries no prefix the literals
# above know. Every run of BASE64_TEXT_MIN..BASE64_TEXT_MAX standard base64 characters with upper, lower and
# digits whose first groups can be ASCII and whose first bytes decode to printable text is decoded whole and
# scanned; images, signatures and hashes decode to binary and are dropped before or after 12 bytes.
BASE64_TEXT_MIN, BASE64_TEXT_MAX = 24, 8192
# the first character of each 4-character group of base64 of ASCII text (a byte below 0x80 >> 2 is below 32)
_ASCII_GROUP_START = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdef"
BASE64_MARKS = _B64_RUN  # the same alphabet as an AWS secret's: one translate serves both
BASE64_RUN_MIN = _RUN_MIN = b"a" * BASE64_TEXT_MIN
_PRINTABLE = bytes(range(0x20, 0x7F)) + b"\t\n\r"


def _printable_share(raw: bytes) -> float:
    return 1 - len(raw.translate(None, _PRINTABLE)) / max(1, len(raw))


def _text_run(data: bytes, start: int, end: int) -> tuple[int, int, str] | None:
    """(start, end with its `=` padding, decoded text) of a run that is base64 of printable text."""
    # cheap reject before any decoding: the first 8 groups must each start like base64 of ASCII text
    if data[start : start + 32 : 4].translate(None, _ASCII_GROUP_START):
        return None
    decoded = _decode_text(data[start:end])
    if decoded is None:
        return None
    stop = end
    while stop < len(data) and data[stop] == 0x3D and stop - end < 2:  # `=` padding
        stop += 1
    return start, stop, decoded


def _decode_text(run: bytes) -> str | None:
    if run.isalpha() or run.isdigit() or run.islower() or run.isupper():
        return None  # words, numbers, hex in one case: not base64 of text worth decoding
    try:
        if _printable_share(base64.b64decode(run[:16])) < 1.0:
            return None
        usable = run[:-1] if len(run) % 4 == 1 else run
        raw = base64.b64decode(usable + b"=" * (-len(usable) % 4))
    except (binascii.Error, ValueError):
        return None
    if _printable_share(raw) < 0.95:
        return None
    return raw.decode("ascii", "replace")
