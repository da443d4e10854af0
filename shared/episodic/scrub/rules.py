"""The detection rules: trigger literals, each with a handler that runs one anchored regex at the hit.

A handler gets the text and where its trigger literal starts and returns the span to redact
(start, end, kind, rank) or None. Anchored `Pattern.match(text, pos)` calls never scan the text;
the one scan is the trigger search (see `finder`). Lower rank wins where two spans overlap
(a known token format beats a generic `KEY=value` guess).

Patterns follow gitleaks' and detect-secrets' rules, adapted to text that is often JSON-escaped
(`\\n`, `\\"` inside tool outputs): a token may follow a literal `\\n`, and values stop at a backslash.

Over 450 lines by design: one anchored rule per secret shape beside its trigger literals, in one table, so a
shape and its trigger cannot drift apart (tests/kits/secret_shapes.py holds a row per shape).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass

from episodic.scrub.values import (
    is_expression,
    is_placeholder,
    looks_credential,
    looks_secret,
    secret_kind_for_name,
    shannon_entropy,
)

Span = tuple[int, int, str, int]  # start, end, kind, rank
Handler = Callable[[str, int], Span | None]

RANK_TOKEN, RANK_CONTEXT, RANK_KEYWORD = 0, 1, 2
_WORD_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
_IDENT_CHARS = _WORD_CHARS | frozenset(".-")


def starts_word(text: str, at: int) -> bool:
    """True where a token may start: not glued to a word, except after an escape like a literal `\\n`."""
    if at <= 0:
        return True
    before = text[at - 1]
    if before not in _WORD_CHARS:
        return True
    return before in "ntr" and at >= 2 and text[at - 2] == "\\"


@dataclass(frozen=True)
class TokenRule:
    """A token with a known shape: the regex matches at `trigger start - back`."""

    kind: str
    pattern: re.Pattern[str]
    back: int = 0
    check: Callable[[str], bool] | None = None
    glued: bool = False  # its shape is unmistakable even glued to a word (`…abc8-----BEGIN … PRIVATE KEY`)
    # characters after the literal that make a text's last run a token's head (`AKIAE3`: one suffices)
    dangling_min: int = 6

    def __call__(self, text: str, start: int) -> Span | None:
        at = start - self.back
        if at < 0 or not (self.glued or starts_word(text, at)):
            return None
        match = self.pattern.match(text, at)
        group = "secret" if "secret" in self.pattern.groupindex else 0
        if match is not None and self.check is not None and not self.check(match.group(group)):
            match = None
        if match is None:
            return self._across_break(text, at, _TOKEN_RUN.match(text, at).end(), whole=False)  # type: ignore[union-attr]
        if _LINE_BREAK.match(text, match.end()) is not None:  # rare: the token may go on on the next line
            joined = self._across_break(text, at, match.end(), whole=True)
            if joined is not None:
                return joined
        return match.start(group), match.end(group), self.kind, RANK_TOKEN

    def dangling(self, text: str, start: int, literal_len: int) -> Span | None:
        """The start of a token that the text ends on (`…AKIAIOSFOD`, the rest in the next message):
        a run of 6+ characters after the literal that some completion would make a token of this rule."""
        at = start - self.back
        if at < 0 or not (self.glued or starts_word(text, at)):
            return None
        head_end = _TOKEN_RUN.match(text, at).end()  # type: ignore[union-attr]
        if head_end - start < literal_len + self.dangling_min or text[head_end:].strip():
            return None
        rest = text[start + literal_len : head_end]
        if _LOWER_WORDS.fullmatch(rest) and not rest.isupper():
            return None  # `sk-learn-extra`, `hf_hub_download`: words, not a token's random start
        head = text[at:head_end]
        for filler in _FILLERS:
            for n in range(1, _MAX_COMPLETION + 1):
                match = self.pattern.fullmatch(head + (filler * n)[:n])
                if match is not None and (self.check is None or self.check(match.group())):
                    return at, head_end, self.kind, RANK_TOKEN
        return None

    def _across_break(self, text: str, at: int, head_end: int, *, whole: bool) -> Span | None:
        """A token cut by line breaks (`ghp_KfCP…\\nDR6T…`, a terminal's wrap, a table's `│` borders): the span
        covers every part, over at most MAX_WRAPS breaks. `whole`: the head alone is a token already, so only
        a tail that is not a plain word joins it. A tail never takes a PEM header or another token of this
        rule (a JWT took the next line's `-----BEGIN` and the key's body went unredacted)."""
        if head_end - at < 8:
            return None
        group = "secret" if "secret" in self.pattern.groupindex else 0
        joined = text[at:head_end]
        cursor = head_end
        found: Span | None = None
        for _ in range(MAX_WRAPS):
            brk = _LINE_BREAK.match(text, cursor)
            if brk is None:
                break
            tail = _TOKEN_RUN.match(text, brk.end()).group()  # type: ignore[union-attr]
            cut = tail.find("-----")
            tail = tail if cut < 0 else tail[:cut]
            if not tail or (whole and _PLAIN_WORD.fullmatch(tail)) or self.pattern.match(tail) is not None:
                break
            base = len(joined)
            joined += tail
            match = self.pattern.match(joined)
            if match is not None and match.end() <= base:
                break
            if match is not None and (self.check is None or self.check(match.group(group))):
                found = at + match.start(group), brk.end() + match.end() - base, self.kind, RANK_TOKEN
                if match.end() < len(joined):
                    break  # the token ended within this tail
            cursor = brk.end() + len(tail)
            whole = True
        return found


MAX_WRAPS = 4  # a token wrapped over five lines at most (a 40-column terminal and a 200-character token)
# spaces and table borders (`|`, `│`, `┃`, `║`) around a break: a cell's end, the next row's empty cells
_BORDER = r"(?:[ \t]*(?:[|\u2502\u2503\u2551]|\\u25(?:02|03|51))){0,4}[ \t]*"  # also JSON's `\u2502`


_TOKEN_RUN = re.compile(r"[A-Za-z0-9_.+/=~-]{0,1024}")
# a real break or an escaped one (JSON, twice-escaped), with a table's borders either side
_LINE_BREAK = re.compile(_BORDER + r"(?:(?:\\{1,3}[nr]){1,2}|\r?\n)" + _BORDER)
_PLAIN_WORD = re.compile(r"[A-Z]?[a-z]+[.,:;!?]?")
_LOWER_WORDS = re.compile(r"[A-Za-z]+(?:[_.-][A-Za-z]+)*")
_FILLERS = ("0", "Aa0", "a0", "A0", "Q")  # completions tried for a dangling token head: hex, mixed, bech32
_MAX_COMPLETION = 128


def _has_digit_and_letter(token: str) -> bool:
    return any(c.isdigit() for c in token) and any(c.isalpha() for c in token)


_OPENAI_KEY_PREFIXES = ("sk-proj-", "sk-svcacct-", "sk-admin-", "sk-None-")


def _openai_body(token: str) -> bool:
    if not (_has_digit_and_letter(token) and any(c.isupper() for c in token)):
        return False
    if "T3BlbkFJ" in token:  # base64 of "OpenAI", in every key since 2023
        return True
    if token.startswith(_OPENAI_KEY_PREFIXES):
        # a project key's body may hold `-` anywhere, also within its last characters
        return len(token.split("-", 2)[2]) >= 32
    body = token.rsplit("-", 1)[-1] if token.count("-") > 1 else token[3:]
    return len(body) >= 8


def _epi_body(token: str) -> bool:
    body = token[4:]
    return not _LOWER_WORDS.fullmatch(body) and (any(c.isdigit() for c in body) or not body.islower())


_ALNUM_END = r"(?![A-Za-z0-9])"
TOKEN_RULES: list[tuple[tuple[str, ...], TokenRule]] = [
    (
        ("AKIA", "ASIA", "ABIA", "ACCA"),
        TokenRule(
            "aws-access-key", re.compile(r"(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}" + _ALNUM_END), dangling_min=1
        ),
    ),
    (
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
        TokenRule("github-token", re.compile(r"gh[pousr]_[A-Za-z0-9]{30,255}" + _ALNUM_END)),
    ),
    (("github_pat_",), TokenRule("github-token", re.compile(r"github_pat_[A-Za-z0-9_]{22,255}"))),
    (("glpat-",), TokenRule("gitlab-token", re.compile(r"glpat-[A-Za-z0-9_-]{20,}"))),
    (
        ("xox",),
        TokenRule("slack-token", re.compile(r"xox[abposre]-[A-Za-z0-9-]{10,}"), check=_has_digit_and_letter),
    ),
    (
        ("hooks.slack.com/",),
        TokenRule(
            "slack-token",
            re.compile(r"hooks\.slack\.com/(?:services|workflows|triggers)/(?P<secret>[A-Za-z0-9_/-]{16,})"),
        ),
    ),
    (
        ("k_live_", "k_test_"),
        TokenRule("stripe-key", re.compile(r"[sr]k_(?:live|test)_[A-Za-z0-9]{10,247}"), 1),
    ),
    (("sk-ant-",), TokenRule("anthropic-key", re.compile(r"sk-ant-[A-Za-z0-9_-]{20,}"))),
    (
        ("sk-",),
        TokenRule(
            "openai-key",
            re.compile(r"sk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_-]{20,}"),
            check=_openai_body,
        ),
    ),
    (("AIza",), TokenRule("google-api-key", re.compile(r"AIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])"))),
    (("npm_",), TokenRule("npm-token", re.compile(r"npm_[A-Za-z0-9]{36}" + _ALNUM_END))),
    (("pypi-AgE",), TokenRule("pypi-token", re.compile(r"pypi-AgE[A-Za-z0-9_-]{40,}"))),
    (("hf_",), TokenRule("huggingface-token", re.compile(r"hf_[A-Za-z]{34}" + _ALNUM_END))),
    (("SG.",), TokenRule("sendgrid-key", re.compile(r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}"))),
    (
        ("eyJ",),
        TokenRule("jwt", re.compile(r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*")),
    ),
    (
        ("-----BEGIN",),
        # a whole PEM block, escaped or not (backslashes only as `\\n` escapes, so JSON stays valid);
        # an unterminated one up to 20,000 body characters
        TokenRule(
            "private-key",
            re.compile(
                r"-----BEGIN[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----"
                r"(?:\\+[nrt]|[\sA-Za-z0-9+/=:,]|-(?!----END)){0,20000}"
                r"(?:-----END[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----)?"
            ),
            glued=True,
        ),
    ),
]

# token rules searched with the position triggers (the main automaton is at its 64 literals)
POSITION_TOKEN_RULES: list[tuple[tuple[str, ...], TokenRule]] = [
    (
        ("epi_",),  # this project's own bearer token (auth.py: "epi_" + token_urlsafe(32))
        TokenRule(
            "episodic-token", re.compile(r"epi_[A-Za-z0-9_-]{40,64}(?![A-Za-z0-9_-])"), check=_epi_body
        ),
    ),
]

_URL_USER = r"://(?P<user>[^\s:/@?#\"'`\\<>\[\]{}|]{0,128}):"
_URL_CREDENTIALS = re.compile(_URL_USER + r"(?P<secret>[^\s/\"'`\\<>\[\]{}|]{1,256})@(?=[A-Za-z0-9\[])")
# a password holding `/` ends at the first `@` that a host and the end of the authority follow
_URL_CREDENTIALS_SLASH = re.compile(
    _URL_USER
    + r"(?P<secret>[^\s\"'`\\<>\[\]{}|]{1,256}?)@(?=[A-Za-z0-9\[][A-Za-z0-9._\-\[\]:]*(?:[/?#\s\"'`\\]|$))"
)
_PORT_PATH = re.compile(
    r"[0-9]{1,5}/"
)  # `http://localhost:5173/@vite/client`: a port and a path, no password


def url_password(text: str, start: int) -> Span | None:
    """`scheme://user:password@host`: the password goes (up to the last `@` before the host, so it may hold
    `@`, `#`, `?` or `/`), the user and host stay; `host:port/path@x` is no password."""
    for pattern in (_URL_CREDENTIALS, _URL_CREDENTIALS_SLASH):
        match = pattern.match(text, start)
        if match is None:
            continue
        password = match.group("secret")
        if _PORT_PATH.match(password) or len(password) < 3 or is_placeholder(password):
            continue
        if password.lower() not in ("pass", "pw", "passwd"):
            return match.start("secret"), match.end("secret"), "password", RANK_CONTEXT
    return None


_QUOTE = r"(?:\\{0,3}[\"'])?"
_AUTHORIZATION = re.compile(
    _QUOTE + r"[ \t]*[:=][ \t]*" + _QUOTE + r"[ \t]*"
    r"(?:(?P<scheme>[Bb]earer|BEARER|[Bb]asic|BASIC|[Tt]oken|TOKEN|[Bb]ot|Digest|SSWS)[ \t]+)?"
    r"(?P<secret>[A-Za-z0-9._~+/:=-]+)"
)


def authorization_header(text: str, start: int) -> Span | None:
    """`Authorization: Bearer …` in headers, curl -H, JSON (escaped too); `start` is at the name."""
    match = _AUTHORIZATION.match(text, start + len("authorization"))
    if match is None:
        return None
    scheme = (match.group("scheme") or "").lower()
    credential = match.group("secret")
    if scheme == "digest" or not looks_credential(credential):
        return None
    if not scheme and not looks_secret(credential, "secret"):
        return None
    kind = "basic-auth" if scheme == "basic" else "bearer-token"
    return match.start("secret"), match.end("secret"), kind, RANK_CONTEXT


_BEARER = re.compile(r"(?:[Bb]earer|BEARER)[ \t]+(?P<secret>[A-Za-z0-9._~+/-]{16,}=*)")


def bearer_token(text: str, start: int) -> Span | None:
    """A bare `Bearer <token>` (string concatenation, logs); `start` is at 'earer'."""
    at = start - 1
    if at < 0 or not starts_word(text, at):
        return None
    match = _BEARER.match(text, at)
    if match is None:
        return None
    token = match.group("secret")
    if not looks_credential(token) or not looks_secret(token, "secret"):
        return None
    return match.start("secret"), match.end("secret"), "bearer-token", RANK_CONTEXT


_CURL_USER = re.compile(
    r"curl [^\n\r|;&]{0,400}?(?:-u|--user)[ =]+"
    + _QUOTE
    + r"(?P<user>[^\s:\"'\\\[\]]+):(?P<secret>[^\s\"'\\\[\]]+)"
)


def curl_user(text: str, start: int) -> Span | None:
    """`curl -u user:password`: the password goes."""
    match = _CURL_USER.match(text, start)
    if match is None:
        return None
    password = match.group("secret")
    if len(password) < 3 or is_placeholder(password):
        return None
    return match.start("secret"), match.end("secret"), "password", RANK_CONTEXT


# a value runs to its closing quote, or unquoted up to a space or a separator; `&`, `(`, `#` may be in it
_VALUE = r"(?P<quote>\\{0,3}[\"'`])?(?P<secret>[^\s\"'`\\,;|<>{}\[\]]+)"
_QUOTED_MAX = 256
# `get_token(…`, `os.getenv(`, `store.add(settings.x`, `open(p).read()`: a dotted name, `(`, then code only (names,
# strings, separators, nested calls; perhaps cut at a space), its first character a name's, a quote or a `)`
_CALL = re.compile(r"[A-Za-z_$][\w$.]+\((?P<args>(?:[A-Za-z_\"')\]][\w\s.,'\"=:\[\]{}()*/-]*)?)")
_CODE_PIECES = re.compile(r"[^A-Za-z0-9_]+")
_ASSIGNMENT = re.compile(
    r"(?P<rest>[A-Za-z0-9_.-]{0,64})" + _QUOTE + r"\]?"
    r"(?:[ \t]*(?::=|=>|==|=|:)[ \t]*|[ \t]+(?:is|was)[ \t]+)" + _VALUE
)
_FLAG_VALUE = re.compile(r"(?P<rest>[A-Za-z0-9_.-]{0,64})[ \t]+" + _VALUE)


# a password named in prose with no `=` or `:` ("use password Xk9#mQ2v to log in", "the root password
# `Xk9#mQ2v`"): the word itself (no other words glued to it), then a run that no sentence holds: 8 to 64 characters
# with a letter and a digit, no path, file name or reference, and 3 bits/char (measured: docs/security.md)
_PROSE_WORD = re.compile(
    r"(?P<rest>[a-z]{0,6})[ \t]+[`\"']?(?P<secret>[^\s`\"',;()<>\[\]{}]{8,64}?)[.,:;!?]?(?=[`\"']?(?:\s|$|\\[nrt]))"
)
_PROSE_FILE = re.compile(r".*\.[A-Za-z]{1,5}|.*[/\\].*|[A-Za-z_]+[0-9]*")


def _prose_password(text: str, start: int, end: int) -> Span | None:
    """`password VALUE` in a sentence (see _PROSE_WORD); `start` is at the trigger, `end` after it."""
    word_start = start
    while word_start > 0 and text[word_start - 1].isalpha():
        word_start -= 1
    if word_start > 0 and text[word_start - 1] in _IDENT_CHARS:
        return None  # `DB_PASSWORD VALUE`, `my-password x`: a name, left to the assignment rules
    match = _PROSE_WORD.match(text, end)
    if match is None or text[word_start : match.end("rest")].lower() not in _PROSE_NAMES:
        return None
    value = match.group("secret")
    if (
        _PROSE_FILE.fullmatch(value)
        or not any(c.isdigit() for c in value)
        or not any(c.isalpha() for c in value)
    ):
        return None
    # 3 bits/char, or nearly all the bits a value this short can have (8 characters hold at most 3)
    if is_placeholder(value) or shannon_entropy(value) < min(3.0, 0.85 * math.log2(len(value))):
        return None
    if not looks_secret(value, "password"):
        return None
    return match.start("secret"), match.end("secret"), "password", RANK_KEYWORD


_PROSE_NAMES = frozenset({"password", "passphrase", "passcode"})


def _name_start(text: str, start: int) -> int:
    """Where the identifier holding the trigger begins (at most 64 characters back)."""
    at = start
    floor = max(0, start - 64)
    while at > floor and text[at - 1] in _IDENT_CHARS:
        at -= 1
    # a literal `\n` before the name is an escape, not part of it
    if at >= 1 and text[at] in "ntr" and text[at - 1] == "\\":
        at += 1
    return at


# a name glued into the end of a long value (`…base64=SMTP_PASSWORD="…"`, `…=SECRET_KEY = '…'`): its trigger is read
_GLUED_NAME = re.compile(r"(?<![A-Za-z0-9_])[A-Za-z_][A-Za-z0-9_]{2,}(?:=|\Z)")
MAX_TRAILING_NAME = 64


def keyword_assignment(text: str, start: int, trigger_len: int) -> tuple[Span | None, int]:
    """`NAME=value`, `"name": "value"`, `name: value`, `--name value` where NAME looks secret.

    Returns the span (or None) and where reading stopped: keyword triggers before it are skipped,
    which keeps a run like `token=token=token=…` linear.
    """
    end = start + trigger_len
    match = _ASSIGNMENT.match(text, end)
    flag = False
    if match is None:
        # only a trigger starting "password", "passphrase" or "passcode" (any case) can start a prose password
        prose = _prose_password(text, start, end) if text[start] in "pP" else None
        if prose is not None:  # its value is one word, which may hold a name (`password aws_secret_key=…`)
            return prose, prose[0]
        if "-" not in text[max(0, start - 64) : start + 1]:
            return None, end  # no `--flag value` possible: skip the second regex (prose is full of "token ")
        match = _FLAG_VALUE.match(text, end)
        flag = True
        if match is None:
            return None, end
    name_end = match.end("rest")
    value_start = match.start("secret")
    value, value_end = _value_at(text, match, value_start)
    # a long value is read once (linear time), but for a name glued to its end (`…base64=SMTP_PASSWORD="…"`);
    # a short one may hold the next name (`a="token": "…"`)
    done = name_end
    if len(value) > 256:
        tail = _GLUED_NAME.search(value, len(value) - MAX_TRAILING_NAME)
        done = value_start + tail.start() if tail else max(match.end("secret"), value_end)
    # `KEY=#x9…` glued to its `=` or quote is a value; after a space `#` starts a comment
    glued_hash = value[:1] == "#" and value[1:2] != "{" and not text[value_start - 1].isspace()
    judged = value.lstrip("#") if glued_hash else value  # `##l8…`: a Django key may start with two
    if len(value) < 6 or is_placeholder(judged):
        return None, done
    name_start = _name_start(text, start)
    if text.endswith("[REDACTED:", max(0, name_start - 10), name_start):
        return None, done  # the name is a placeholder's kind (`[REDACTED:password]: …`)
    if flag and not text.startswith("-", name_start):
        return None, done
    name = text[name_start:name_end].lstrip("-")
    kind = secret_kind_for_name(name, value)
    if kind is None:
        return None, done
    quote = match.group("quote")
    if _is_code(value, quoted=bool(quote) and text.startswith(quote, value_end)):
        return None, done
    rest = _AWS_SECRET_REST.match(text, value_end) if len(value) < 40 else None
    if rest is not None:
        # `aws_secret_access_key=<20>⏎<20>`: the next line holds the rest of the secret, judged whole (a half of
        # letters can look like a name)
        joined = value + rest.group("tail")
        if secret_kind_for_name(name, joined) == "aws-secret-key" and looks_secret(joined, "secret"):
            return (value_start, rest.end(), "aws-secret-key", RANK_KEYWORD), max(done, rest.end())
    if not looks_secret(judged, kind):
        return None, done
    # a short value is read again for names (`A=x=SECRET_KEY = '…'`: pairs glued by `=`)
    return (value_start, value_end, kind, RANK_KEYWORD), done


# the rest of a split AWS secret: the next line's run (an `=` may follow it: the next assignment glued on)
_AWS_SECRET_REST = re.compile(
    r"[ \t]*(?:\\{1,3}[nr]|\r?\n)[ \t]*(?P<tail>[A-Za-z0-9/+]{1,36})(?![A-Za-z0-9/+])"
)


def _is_code(value: str, *, quoted: bool) -> bool:
    """A call (`get_token(…`, `os.getenv(`) or an expression (`token = (message_id, key)`) rather than a value.
    Parentheses alone make no call: what they hold must read as code, with no random run in it (a Django key's
    `abc(x9…)…`). Between quotes a call is whole and balanced (`"getpass()"`), as a string holds no cut call."""
    if value[0] == "(":
        return is_expression(value)
    match = _CALL.fullmatch(value)
    if match is None:
        return False
    if quoted and not (value.endswith(")") and value.count("(") == value.count(")")):
        return False
    pieces = _CODE_PIECES.split(match.group("args"))
    return not any(looks_secret(piece, "secret") for piece in pieces if piece)


def _value_at(text: str, match: re.Match[str], value_start: int) -> tuple[str, int]:
    """The value an assignment match holds and where it ends: up to its closing quote when quoted
    (`Password="a;b"`, `SECRET_KEY = 'django-insecure-…&(…'`), else its unquoted run, less a sentence's end,
    an unbalanced `)` and, in a URL query (`?password=x&user=y`), what follows an `&`."""
    quote = match.group("quote")
    if quote:
        close = text.find(quote, value_start, value_start + _QUOTED_MAX + len(quote))
        if close > value_start:
            quoted = text[value_start:close]
            if not any(c.isspace() for c in quoted) and "\\" not in quoted.replace(quote, ""):
                return quoted, close
    value = match.group("secret")
    name_at = match.start("rest") - 1
    while name_at > 0 and text[name_at] in _IDENT_CHARS:
        name_at -= 1
    if "&" in value and text[name_at : name_at + 1] in ("?", "&"):
        value = value.split("&", 1)[0]
    value = value.rstrip(".:!?")  # the end of a sentence is not part of the value
    if value.endswith(")") and value.count("(") < value.count(")"):
        value = value.rstrip(")")
    return value, value_start + len(value)


_LOWER = "abcdefghijklmnopqrstuvwxyz"
_UPPER = _LOWER.upper()
# Case variants of the words a secret's name holds, each with the characters that may not follow it
# (`tokens`, `author`, `Keyboard`, `SECRETARY` are other words): a cheap reject before any regex runs.
# The name's words then decide (see values.secret_kind_for_name).
KEYWORD_LITERALS: dict[str, frozenset[str]] = {
    "passw": frozenset(), "Passw": frozenset(), "PASSW": frozenset(),
    "pwd": frozenset(_LOWER + _UPPER), "Pwd": frozenset(_LOWER + _UPPER), "PWD": frozenset(_LOWER + _UPPER),
    "secret": frozenset(_LOWER) - {"s"}, "Secret": frozenset(_LOWER) - {"s"}, "SECRET": frozenset(_UPPER) - {"S"},
    "Token": frozenset(_LOWER), "TOKEN": frozenset(_UPPER),
    "auth": frozenset(_LOWER), "Auth": frozenset(_LOWER), "AUTH": frozenset(_UPPER),
    "credential": frozenset(_LOWER) - {"s"}, "Credential": frozenset(_LOWER) - {"s"},
    "CREDENTIAL": frozenset(_UPPER) - {"S"},
    "KEY": frozenset(_UPPER), "_key": frozenset(_LOWER), "-key": frozenset(_LOWER), "Key": frozenset(_LOWER),
    "apikey": frozenset(), "Apikey": frozenset(),
}  # fmt: skip
# `token` is in every usage block (`"input_tokens":`): it triggers only with a follower a name or an
# assignment can have, which keeps ~100,000 hits per 100 MB of transcripts out of the Python loop.
TOKEN_FOLLOWERS = "\"'_-.=: \\]"
KEYWORD_LENGTHS: dict[str, int] = {literal: len(literal) for literal in KEYWORD_LITERALS}
for _follower in TOKEN_FOLLOWERS:
    KEYWORD_LITERALS["token" + _follower] = frozenset()
    KEYWORD_LENGTHS["token" + _follower] = len("token")
# Further words a secret's name holds without saying "secret" (`…_SALT`, `…_PASSPHRASE`; a `…_DSN`'s key
# is found in its URL),
# searched by an automaton of their own (the one above is at its 64 literals)
NAME_LITERALS: dict[str, frozenset[str]] = {
    # whole words, listed before `pass`: where two literals start at one place the earlier-listed one is reported
    "passphrase": frozenset(), "Passphrase": frozenset(), "PASSPHRASE": frozenset(),
    "passcode": frozenset(), "Passcode": frozenset(), "PASSCODE": frozenset(),
    "salt": frozenset(_LOWER), "Salt": frozenset(_LOWER), "SALT": frozenset(_UPPER),
    "pepper": frozenset(_LOWER), "Pepper": frozenset(_LOWER), "PEPPER": frozenset(_UPPER),
    "creds": frozenset(_LOWER), "Creds": frozenset(_LOWER), "CREDS": frozenset(_UPPER),
    "hmac": frozenset(_LOWER), "Hmac": frozenset(_LOWER), "HMAC": frozenset(_UPPER),
    "passkey": frozenset(_LOWER), "PASSKEY": frozenset(_UPPER),
    # `DB_PASS`, `smtp_pass`, `dbPass` (a Kubernetes Secret's `DB_PASS: <base64>`); `PASSWORD` has its own
    "PASS": frozenset(_UPPER), "pass": frozenset(_LOWER), "Pass": frozenset(_LOWER),
}  # fmt: skip
for _literal in NAME_LITERALS:
    KEYWORD_LENGTHS[_literal] = len(_literal)
AUTHORIZATION_LITERALS = ("authorization", "Authorization", "AUTHORIZATION")  # listed before "auth"
BEARER_LITERALS = ("earer", "EARER")
