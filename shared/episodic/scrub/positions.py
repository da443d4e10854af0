"""Credentials found by where they stand, whatever their characters: a password flag of a command
that takes one (`mysql -pPASSWORD`, `sshpass -p …`, `docker login -p …`), a `.netrc` line's `password`
field, a `.pgpass` line's last field, and a key standing alone as a URL's user (`https://<key>@…sentry.io`,
a Sentry DSN). Each handler gets the text and where its trigger literal starts and returns the span to
redact (see `rules`); the commands and their flags are rows of data.
"""

from __future__ import annotations

import re

from episodic.scrub.rules import RANK_CONTEXT, Span, starts_word
from episodic.scrub.values import is_placeholder, shannon_entropy

# command -> its password flags; a flag ending in "+" takes its value glued (`-pSECRET`), "=" glued after
# `=`, others as the next word; "#N": the password is the positional argument after N others. Sources: each
# tool's manual page. Commands of fewer than four letters (`7z`, `zip`, `bcp`) are left out: a short literal slows
# the trigger search of every text (see engine.SHORT_LITERAL_CHARS).
COMMAND_PASSWORD_FLAGS: dict[str, tuple[str, ...]] = {
    "mysql": ("-p+", "--password=", "--password"),
    "mysqldump": ("-p+", "--password=", "--password"),
    "mysqladmin": ("-p+", "--password=", "--password"),
    "mariadb": ("-p+", "--password=", "--password"),
    "mariadb-dump": ("-p+", "--password=", "--password"),
    "sshpass": ("-p+", "-p"),
    "docker login": ("-p", "--password", "--password="),
    "podman login": ("-p", "--password", "--password="),
    "buildah login": ("-p", "--password", "--password="),
    "helm registry login": ("-p", "--password", "--password="),
    "oras login": ("-p", "--password", "--password="),
    "skopeo login": ("-p", "--password", "--password="),
    "redis-cli": ("-a", "--pass"),
    "mongo": ("-p", "--password", "--password="),
    "mongosh": ("-p", "--password", "--password="),
    "mongodump": ("-p", "--password", "--password="),
    "sqlcmd": ("-P",),
    "ldapsearch": ("-w",),
    "ldapmodify": ("-w",),
    "ldapadd": ("-w",),
    "htpasswd -b": ("#2",),
    "unrar": ("-p+",),
    "openssl": ("-passin pass:+", "-passout pass:+", "-pass pass:+", "-k"),
    "smbclient": ("--password=", "--password"),
    "wget": ("--password=", "--http-password=", "--ftp-password="),
    "psql": ("--password=",),
    "rabbitmqadmin": ("-p", "--password=", "--password"),
    "vault login": ("#0",),
}
COMMAND_LITERALS: tuple[str, ...] = tuple(dict.fromkeys(name.split()[0] for name in COMMAND_PASSWORD_FLAGS))

_LINE_END = re.compile(r"\r|\n|\\[nr]|&&|\|\||;|\|")
_VALUE = r"""(?:"(?P<dq>[^"\n]{1,256})"|'(?P<sq>[^'\n]{1,256})'|(?P<bare>[^\s"'`\\;|]{1,256}))"""


def _flag_regex(flag: str) -> str:
    if flag.endswith("+"):
        return r"(?<!\S)" + re.escape(flag[:-1])
    if flag.endswith("="):
        return r"(?<!\S)" + re.escape(flag)
    return r"(?<!\S)" + re.escape(flag) + r"[ \t]+"


def _command_regex(command: str, flags: tuple[str, ...]) -> re.Pattern[str]:
    words = r"[ \t]+".join(re.escape(word) for word in command.split())
    if flags[0].startswith("#"):  # `htpasswd -b FILE USER PASSWORD`, `vault login TOKEN`
        skip = r"(?:[ \t]+(?!-)\S+){" + flags[0][1:] + "}"
        return re.compile(words + skip + r"[ \t]+(?!-)" + _VALUE)
    alternatives = "|".join(_flag_regex(flag) for flag in flags)
    return re.compile(words + r"\b[^\n]*?(?:" + alternatives + ")" + _VALUE)


_COMMANDS: dict[str, list[re.Pattern[str]]] = {}
for _command, _flags in COMMAND_PASSWORD_FLAGS.items():
    _COMMANDS.setdefault(_command.split()[0], []).append(_command_regex(_command, _flags))
_MIN_PASSWORD = 4


def _value_span(match: re.Match[str]) -> tuple[int, int] | None:
    for group in ("dq", "sq", "bare"):
        if match.group(group) is not None:
            value = match.group(group)
            if len(value) < _MIN_PASSWORD or is_placeholder(value) or value.lower() in ("stdin", "env"):
                return None
            return match.start(group), match.end(group)
    return None


def command_password(text: str, start: int) -> Span | None:
    """A password given on a command line by its flag; `start` is at the command's name."""
    if not starts_word(text, start):
        return None
    name_end = start
    while name_end < len(text) and (text[name_end].isalnum() or text[name_end] in "-_"):
        name_end += 1
    patterns = _COMMANDS.get(text[start:name_end])
    if not patterns:
        return None
    brk = _LINE_END.search(text, name_end, name_end + 1024)
    stop = brk.start() if brk else min(len(text), name_end + 1024)
    for pattern in patterns:
        match = pattern.match(text, start, stop)
        if match is not None:
            span = _value_span(match)
            if span is not None:
                return span[0], span[1], "password", RANK_CONTEXT
    return None


_SPACE = r"(?:[ \t]|\\{1,3}[nrt]|\r?\n)+"
_NETRC = re.compile(
    r"(?:machine" + _SPACE + r"[^\s\\]+|default)"
    r"(?:"
    + _SPACE
    + r"(?:login|account|port)"
    + _SPACE
    + r"[^\s\\]+){0,3}"
    + _SPACE
    + r"password"
    + _SPACE
    + r"(?P<secret>[^\s\\]{1,256})"
)


def netrc_password(text: str, start: int) -> Span | None:
    """`machine HOST login USER password SECRET` (`.netrc`, one line or several); `start` is at `machine`."""
    if not starts_word(text, start):
        return None
    match = _NETRC.match(text, start)
    if match is None or is_placeholder(match.group("secret")):
        return None
    return match.start("secret"), match.end("secret"), "password", RANK_CONTEXT


PGPASS_LITERALS = (":5432:", ":6432:", ":*:*:", ":*:postgres:")  # the ports and wildcards most lines have
_PGPASS = re.compile(
    r"(?P<host>[A-Za-z0-9_.*\[\]-]{1,253}):(?P<port>[0-9]{1,5}|\*):(?P<db>[^\s:]{1,64}):(?P<user>[^\s:]{1,64}):"
    # the line ends, or a command (`; cmd`, `&& cmd`) or a comment (` # note`) follows it on the line
    r"(?P<secret>[^\s\\]{1,256}?)[ \t]*(?=\r|\n|\\[nr]|$|[\"'`]|(?:;|&&|\|\|?)(?:[ \t]|$)|(?<=[ \t])#)"
)


_HOST_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.*[]-")


def pgpass_password(text: str, start: int) -> Span | None:
    """`host:port:database:user:password`, a `.pgpass` line; `start` is at `:port:`."""
    at = start
    floor = max(0, start - 253)
    while at > floor and text[at - 1] in _HOST_CHARS:
        at -= 1
    if text[at : at + 1] in ("n", "r", "t") and text[at - 1 : at] == "\\":
        at += 1  # a JSON escape before the line is not part of its host
    match = _PGPASS.match(text, at)
    if match is None or match.start("port") - 1 != start:
        return None
    value = match.group("secret")
    if len(value) < _MIN_PASSWORD or is_placeholder(value):
        return None
    return match.start("secret"), match.end("secret"), "password", RANK_CONTEXT


_URL_KEY_USER = re.compile(r"://(?P<secret>[A-Za-z0-9_-]{20,128})@[A-Za-z0-9.-]+")


def url_key_user(text: str, start: int) -> Span | None:
    """A key standing alone as a URL's user (`https://<32 hex>@o1.ingest.sentry.io/2`, a DSN); `start` at `://`."""
    match = _URL_KEY_USER.match(text, start)
    if match is None:
        return None
    value = match.group("secret")
    if not any(c.isdigit() for c in value) or shannon_entropy(value) < 3.0 or is_placeholder(value):
        return None
    return match.start("secret"), match.end("secret"), "secret", RANK_CONTEXT


_TELEGRAM = re.compile(r"[0-9]{5,16}:(?P<secret>AA[A-Za-z0-9_-]{33})(?![A-Za-z0-9_-])")


def telegram_bot_token(text: str, start: int) -> Span | None:
    """A Telegram bot token, `<bot id>:AA<33>`; `start` is at `:AA`. The bot id stays."""
    at = start
    while at > max(0, start - 16) and text[at - 1].isdigit():
        at -= 1
    if start - at < 5 or not (starts_word(text, at) or text.endswith("/bot", 0, at)):  # `…/bot<token>/getMe`
        return None
    match = _TELEGRAM.match(text, at)
    if match is None:
        return None
    return match.start("secret"), match.end("secret"), "telegram-bot-token", RANK_CONTEXT


_BREAK = r"(?:\\{1,3}[nr]|\r?\n)"
_PPK_HEADER = re.compile(r"Private-Lines:[ \t]*(?P<lines>[0-9]{1,3})[ \t]*")
_PPK_LINE = re.compile(_BREAK + r"[A-Za-z0-9+/=]{1,128}")


def ppk_private_lines(text: str, start: int) -> Span | None:
    """The private lines of a PuTTY `.ppk` key file: the N lines after `Private-Lines: N`; `start` is
    at the header."""
    header = _PPK_HEADER.match(text, start)
    if header is None:
        return None
    end = header.end()
    for _ in range(min(int(header.group("lines")), 64)):
        line = _PPK_LINE.match(text, end)
        if line is None:
            break
        end = line.end()
    return (header.end(), end, "private-key", RANK_CONTEXT) if end > header.end() else None


_FCM_KEY = re.compile(r"AAAA[A-Za-z0-9_-]{7}:APA91b[A-Za-z0-9_-]{100,300}(?![A-Za-z0-9_-])")


def fcm_server_key(text: str, start: int) -> Span | None:
    """A Firebase Cloud Messaging server key, `AAAA<7>:APA91b<134>`; `start` is at `:APA91b`."""
    at = start - 11
    if at < 0 or not starts_word(text, at):
        return None
    match = _FCM_KEY.match(text, at)
    return None if match is None else (at, match.end(), "firebase-fcm-key", RANK_CONTEXT)
