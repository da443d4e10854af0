"""Does a value next to a secret-looking name look like a real secret, and is the name secret-looking?

Used by the keyword rules (`KEY=value`, `"key": "value"`, `key: value`), where the name gives the
context and the value decides. Code and placeholders must come back untouched, so a value is a
secret only if it is long enough, not a reference (`$VAR`, `${...}`, `os.environ`, `self.token`),
not a placeholder (`<your-token>`, `***`, `changeme`, `your_api_key_here`), not a plain word or
identifier (`string`, `get_token`, `accessToken`), not only digits (counts, timestamps), and has
enough Shannon entropy (>= 3.0 bits/char for non-password names).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from functools import lru_cache

PLACEHOLDER_WORDS = frozenset(
    {
        "changeme", "change-me", "change_me", "password", "passwd", "secret", "token", "example",
        "sample", "dummy", "test", "testing", "placeholder", "redacted", "none", "null", "nil",
        "true", "false", "undefined", "string", "str", "required", "optional", "empty", "default",
        "hidden", "masked", "unknown", "notset", "not-set", "pass", "secrets", "credentials",
    }
)  # fmt: skip
_PLACEHOLDER_PREFIXES = ("your", "my-", "my_", "example", "replace", "insert", "enter-", "enter_", "todo")
_PLACEHOLDER_START = (
    "{<#["  # templates, markup, comments, [REDACTED:...]: never the first character of a secret
)
# These first characters start a stand-in only in the shapes below (the first character alone exempted many random
# keys: Azure SAS signatures, Django keys): a variable or command (`$HOME`, `$dbPass`, `${DB_PASS}`, `$(cat f)`,
# `$HOME/.ssh`; a name in one case or camel case, as a random `$gXIJq…` is not), a format (`%s`, `%(pw)s`,
# `%APPDATA%\x`), a glob or mask (`*.pem`, `***`, `*/x`), an expression (`(a, b)`: code inside one pair of
# parentheses, nothing after them), a path (see _is_path). Anything else after such a character is a value
# (`(…)…`, `$abc-…`, `*…` of a Django key)
_REFERENCE = re.compile(
    r"\$(?:\{[^}]*\}|\([^)]*\)|(?:[A-Z_][A-Z0-9_]*|[a-z_][a-z0-9_]*|[A-Za-z][a-z]+(?:[A-Z][a-z]+)*)(?:[/:].*)?"
    r"|[0-9@*#?!])"
    r"|%(?:\([A-Za-z_]\w*\))?[-#0 +]*[0-9]*(?:\.[0-9]+)?[sdifgGxXrcuoeE]|%[A-Za-z_]\w*%(?:[\\/].*)?"
    r"|\*+(?:\.[\w.]+|/.*|[^*]{1,16}\*+[`'\").,;:]*)?",
    re.DOTALL,
)
# code in parentheses: names, strings, numbers, separators (`(message_id, key)`, `(a,` cut at a space)
_EXPRESSION = re.compile(r"\((?P<inner>[\w\s.,'\"=:\[\]-]*)\)?")
# a path: `/x/y`, `./x`, `../x`, `~/x`, `~user/x` (every segment a lower-case name or a word); `/x` and a dotfile
# `.name` only when lower case (`/tmp`, `.env`): a single mixed-case run is a secret's random start (`/YMfGmz…`)
_PATH_START = re.compile(r"(?:~[A-Za-z0-9_.-]*|\.{1,2})/|/")
_LOWER_SEGMENT = re.compile(r"[a-z0-9_.@+-]*")
# words (a capital and two or more lower-case letters, or a lower-case run: `Library`, `Application Support`,
# `id_rsa`) or one upper-case name (`README.md`); random letters put a capital before one lower-case letter or another
_WORD = r"(?:[A-Z]?[a-z]{2,}|[a-z]+)"
_PATH_SEGMENT = re.compile(rf"(?:{_WORD}(?:[ _.-]?{_WORD})*|[A-Z0-9_]+)(?:\.[A-Za-z0-9]+)?")
_MASK_RUNS = ("xxxx", "XXXX", "****", "...", "…", "••")

# a name of letters only: one case, or camel/Pascal case whose words have 3+ letters (`hashedPassword`, `SecretStr`);
# random letters fit this more often the shorter they are (measured in docs/security.md)
_IDENTIFIER_LETTERS = re.compile(r"[a-z]+|[A-Z]+|(?:[a-z]+|[A-Z][a-z]{2,})(?:[A-Z][a-z]{2,})*")
_CODE_REFERENCE = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+")  # self.token, os.environ
_WORDS_ONLY = re.compile(r"[A-Za-z]+(?:[_\-.][A-Za-z]+)*")  # identifiers and words, snake/kebab
_NUMERIC_LIKE = re.compile(r"[0-9.:/+\-TZ ]+")  # numbers, versions, dates, times, IPs
AWS_SECRET_SHAPE = re.compile(r"[A-Za-z0-9/+=]{40}")

PASSWORD_WORDS = frozenset({"password", "passwd", "pwd", "passphrase", "passcode"})
SECRET_WORDS = frozenset(
    {"secret", "secrets", "token", "auth", "credential", "credentials", "apikey", "privatekey",
     "secretkey", "accesskey", "sessiontoken", "authtoken", "accesstoken", "salt", "pepper", "dsn", "creds",
     "hmac", "passkey", "privkey"}
)  # fmt: skip
KEY_QUALIFIERS = frozenset(
    {"api", "access", "private", "secret", "signing", "encryption", "master", "client", "app",
     "license", "service", "account", "admin", "deploy", "webhook", "session", "auth", "shared",
     "hmac", "jwt", "decryption", "cipher", "aes", "ssh", "gpg", "pgp", "rsa", "root", "storage", "sas",
     "subscription", "consumer", "bot", "integration", "personal", "recovery", "unlock", "sign", "crypto"}
)  # fmt: skip
_NOT_SECRET_KEY_OWNERS = frozenset(
    {"primary", "sort", "partition", "cache", "foreign", "map", "lookup", "idempotency", "hot",
     "public", "pub", "unique", "composite", "dedup", "dedupe", "object", "s3", "route", "react"}
)  # fmt: skip
# a name whose last word is one of these names a property of a secret, not the secret itself
NOT_SECRET_LAST = frozenset(
    {"url", "uri", "urls", "path", "paths", "file", "files", "dir", "directory", "name", "names", "id",
     "ids", "type", "types", "count", "counts", "len", "length", "size", "limit", "limits", "max", "min",
     "ttl", "expiry", "expires", "expiration", "at", "header", "headers", "prefix", "suffix", "env",
     "var", "field", "fields", "version", "endpoint", "method", "mode", "provider", "kind", "format",
     "enabled", "disabled", "required", "hint", "label", "description", "ref", "arn", "pattern",
     "regex", "manager", "store", "location", "policy", "scope", "scopes", "issuer", "audience",
     "tokens", "index", "hash", "style", "class", "rotation", "reset", "error", "errors", "usage",
     "budget", "estimate", "ratio", "rate", "cost", "source", "sources", "list", "map", "set",
     "input", "output", "option", "options", "config", "settings", "schema", "flag", "strength", "validation", "valid", "invalid", "expired", "text", "display"}
)  # fmt: skip
NOT_SECRET_FIRST = frozenset(
    {"next", "page", "continuation", "pagination", "cancellation", "cancel", "max", "min", "total",
     "input", "output", "num", "completion", "prompt", "cache", "eos", "bos", "pad", "unk", "sep",
     "cls", "mask", "special", "reasoning", "thinking", "context", "sync", "start", "end", "is",
     "has", "use", "show", "no", "skip", "forgot", "last", "first"}
)  # fmt: skip

# names whose last word would make them a property (`…_id`) yet name a secret: a GCP service account key's
# `private_key_id`, kept beside the key in the same JSON file
SECRET_DESPITE_LAST = frozenset({("private", "key", "id")})

_GLUED_SECRET_ENDS = ("secret", "token", "apikey", "secretkey", "accesskey", "privatekey")
_IDENT_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


def shannon_entropy(value: str) -> float:
    """Bits per character of the value's own character distribution."""
    if not value:
        return 0.0
    total = len(value)
    return -sum(n / total * math.log2(n / total) for n in Counter(value).values())


def name_words(name: str) -> list[str]:
    """Lower-cased words of an identifier: AWS_SECRET_ACCESS_KEY, apiKey, x-api-key, SecretAccessKey."""
    return [word.lower() for word in _IDENT_WORDS.findall(name)]


def secret_kind_for_name(name: str, value: str = "") -> str | None:
    """The placeholder kind a value under this name gets, or None when the name is not secret-looking."""
    kind = _kind_for_name(name)
    if kind == _AWS_SECRET_NAME:
        return "aws-secret-key" if AWS_SECRET_SHAPE.fullmatch(value) else "secret"
    return kind


_AWS_SECRET_NAME = "<aws secret name>"  # the one verdict that also depends on the value's shape


@lru_cache(maxsize=4096)
def _kind_for_name(name: str) -> str | None:
    """`secret_kind_for_name` without the value: cached, as tool inputs repeat the same few keys."""
    words = name_words(name)
    if tuple(words[-3:]) in SECRET_DESPITE_LAST:
        return "secret"
    if not words or words[-1] in NOT_SECRET_LAST or words[0] in NOT_SECRET_FIRST:
        return None
    present = set(words)
    if present & PASSWORD_WORDS or any(w.endswith(("password", "passwd")) for w in words):
        return "password"  # PGPASSWORD, DBPASSWORD: glued names too
    if words[-1] == "pass" and len(words) >= 2:
        return "password"  # DB_PASS, smtpPass; a lone `PASS:` is a test runner's verdict
    if "secret" in present and ("aws" in present or {"access", "key"} <= present):
        return _AWS_SECRET_NAME
    if present & SECRET_WORDS or any(w.endswith(_GLUED_SECRET_ENDS) for w in words):
        return "secret"
    if "key" in present:
        at = words.index("key")
        before = words[at - 1] if at else ""
        if before in KEY_QUALIFIERS:
            return "secret"
        # SIGNING_KEY, STRIPE_KEY: upper-case environment names ending in KEY
        if name.isupper() and len(words) >= 2 and words[-1] == "key" and before not in _NOT_SECRET_KEY_OWNERS:
            return "secret"
    return None


def is_placeholder(value: str) -> bool:
    """A stand-in, a reference or a masked value rather than a secret."""
    if not value or value[0] in _PLACEHOLDER_START:
        return True
    if value[0] in "$%*(/.~" and is_reference(value):
        return True
    lowered = value.lower()
    if lowered in PLACEHOLDER_WORDS or lowered.startswith(_PLACEHOLDER_PREFIXES):
        return True
    if len(set(value)) <= 2 or any(run in value for run in _MASK_RUNS):
        return True
    return "redacted" in lowered


def is_reference(value: str) -> bool:
    """A variable, format, glob, expression or path standing in for a value (see _REFERENCE)."""
    if _REFERENCE.fullmatch(value):
        return True
    if value[0] == "(":
        return is_expression(value)
    return _is_path(value)


def is_expression(value: str) -> bool:
    """`(a, b)` or its start: code between parentheses and nothing after them; a random run inside is no code."""
    match = _EXPRESSION.fullmatch(value)
    if match is None:
        return False
    pieces = re.split(r"[^A-Za-z0-9_]+", match.group("inner"))
    return not any(looks_secret(piece, "secret") for piece in pieces if piece)


def _is_path(value: str) -> bool:
    if value[0] == "." and "/" not in value:  # a dotfile's name (`.env`, `.netrc`)
        return _LOWER_SEGMENT.fullmatch(value[1:]) is not None
    start = _PATH_START.match(value)
    if start is None:
        return False
    segments = value[start.end() :].strip("/").split("/")
    if value[0] == "/" and len(segments) == 1:  # `/tmp`, never `/YMfGmzWk…`
        return _LOWER_SEGMENT.fullmatch(segments[0]) is not None
    return all(_LOWER_SEGMENT.fullmatch(seg) or _PATH_SEGMENT.fullmatch(seg) for seg in segments)


def looks_secret(value: str, kind: str) -> bool:
    """Whether a value under a secret-looking name is a real secret (see the module docstring)."""
    password = kind == "password"
    if len(value) < (6 if password else 8) or is_placeholder(value):
        return False
    if value.isdigit():
        return password
    if _CODE_REFERENCE.fullmatch(value) or _NUMERIC_LIKE.fullmatch(value):
        return False
    if value[0] == "+" and _WORDS_ONLY.fullmatch(value[1:]) and not _random_letters(value[1:]):
        return False  # "secret: " + someVariable: string concatenation, not a value
    if _WORDS_ONLY.fullmatch(value):
        # identifiers are words (snake, kebab, camel); random letters switch case about half the time, and put
        # a capital before a single lower-case letter or another capital where an identifier has a word
        if not value.isalpha() or len(value) < (8 if password else 16):
            return False
        if _random_letters(value):
            return True
        upper = sum(c.isupper() for c in value) / len(value)
        return len(value) >= 16 and 0.3 <= upper <= 0.7 and shannon_entropy(value) >= 3.5
    return password or shannon_entropy(value) >= 3.0


def _random_letters(value: str) -> bool:
    """Letters in no identifier's shape (see _IDENTIFIER_LETTERS), varied enough to be drawn at random."""
    varied = shannon_entropy(value) >= min(3.0, 0.85 * math.log2(len(value)))  # 8 letters hold at most 3 bits
    return value.isalpha() and not _IDENTIFIER_LETTERS.fullmatch(value) and varied


def looks_credential(value: str) -> bool:
    """A token after an explicit scheme (`Bearer …`, `Basic …`): anything that is not a stand-in."""
    if len(value) < 8 or is_placeholder(value):
        return False
    return not (value.isalpha() and (value.islower() or value.isupper()))
