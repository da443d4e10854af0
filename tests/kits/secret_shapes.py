"""Issue 40's secret shapes: credentials found by position, encoded or wrapped secrets, this project's own
token, and a PEM block right after a JWT. Shared by `adversarial/test_scrub_shapes.py` (every flow) and
`adversarial/test_scrub_pairs.py` (any two side by side). Secrets are built at run time from seeded random
bodies (see `secret_kit`), so that no secret scanner flags these files.

Each shape is (name, planted text, the parts that must not survive anywhere).
"""

from __future__ import annotations

import base64
import string

from kits.secret_kit import ALNUM, B64URL, HEX, body

PASSWORD = body(ALNUM, 10) + "#&(" + body(ALNUM, 4)  # characters that used to end a value
STRIPE = "sk_live_" + body(ALNUM, 24)
NPM = "npm_" + body(ALNUM, 36)
GITHUB = "ghp_" + body(ALNUM, 36)
ANTHROPIC = "sk-ant-api03-" + body(B64URL, 93) + "AA"
AWS_ID = "AKIA" + body(string.ascii_uppercase + "234567", 16)
AWS_SECRET = body(ALNUM + "/+", 40)
EPI = "epi_" + body(B64URL, 43)
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIx" + body(B64URL, 20) + "." + body(B64URL, 43)
PEM_BODY = [body(ALNUM + "+/", 64) for _ in range(3)]
PEM = "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(PEM_BODY) + "\n-----END RSA PRIVATE KEY-----"


def _pw(n: int) -> str:
    return body(ALNUM, n)


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


URL_PW, GIT_PW, DB_PW, REDIS_PW = _pw(12), _pw(12), "p@ss#" + _pw(9), _pw(14)
MYSQL_PW, SSHPASS_PW, DOCKER_PW, FLAG_PW = _pw(12), "Tr0ub&" + _pw(6), _pw(14), _pw(11)
NETRC_PW, PGPASS_PW, SENTRY_KEY, CONN_PW = _pw(13), _pw(12), body(HEX, 32), "a;b" + _pw(9)
HASH_PW, AMP_PW, PAREN_PW = _pw(11), "ab&" + _pw(10), "x(" + _pw(10)
SALT, PASSPHRASE, SIGNING = _pw(24), "correct-horse-" + _pw(8), _pw(32)
DJANGO = "django-insecure-" + "k9#x@m2$q(v8&z!p7w^r4t*y1" + _pw(12)
ENV_PW = _pw(12)
K8S_PW = _pw(16)
# issue 52: values whose first character once made them a path or a variable, `(` inside quotes, `/` in a URL password
LEADING = {c: c + _pw(15) for c in "$%*(/.~"}
SAS_SIG = "/" + body(ALNUM + "+/", 42) + "="
AWS_SECRET_2 = body(ALNUM + "/+", 40)
DISCORD = "MTA" + body(ALNUM, 23) + "." + body(B64URL, 6) + "." + body(B64URL, 38)
TELEGRAM = "7301234567:AA" + body(B64URL, 33)
FCM = "AAAA" + body(B64URL, 7) + ":APA91b" + body(B64URL, 134)
PPK_PRIVATE = [body(ALNUM + "+/", 64), body(ALNUM + "+/", 30) + "=="]
PPK = (
    "PuTTY-User-Key-File-3: ssh-rsa\nEncryption: none\nComment: deploy\nPublic-Lines: 1\n"
    "AAAAB3NzaC1yc2EAAAADAQABAAABAQ\nPrivate-Lines: 2\n"
    + "\n".join(PPK_PRIVATE)
    + "\nPrivate-MAC: "
    + body(HEX, 64)
)
PROSE_PW, PROSE_BARE_PW = _pw(12), "Tr0ub4dor&" + _pw(4)
QUOTED_PAREN_PW, URL_SLASH_PW, K8S_PASS, PGPASS_CMD_PW = "ab(" + _pw(10), "ab/" + _pw(10), _pw(14), _pw(12)
# issue 60: secret-named values that read as a call or as a path, letters-only halves and passwords, a GCP key id
DJANGO_CHARS = string.ascii_lowercase + string.digits + "!@#$%^&*-_=+"  # Django's, less its parentheses
DJANGO_PAREN = "(" + body(DJANGO_CHARS, 6) + ")" + body(DJANGO_CHARS, 43)
DJANGO_CALL = "abc(k" + body(DJANGO_CHARS, 5) + ")" + body(DJANGO_CHARS, 40)
DOT_LETTERS, SLASH_LETTERS = "." + body(string.ascii_letters, 19), "/" + body(string.ascii_letters, 19)
# a head of letters, few upper case (heads a third or more upper case were caught already), or from a `/`
AWS_LETTERS_HEAD = body(string.ascii_lowercase, 13) + body(string.ascii_letters, 7)
AWS_SLASH_HEAD = "/" + body(string.ascii_letters + "+", 19)
AWS_TAILS = body(ALNUM + "/+", 20), body(ALNUM + "/+", 20)
PROSE_LETTERS_PW, GCP_KEY_ID = body(string.ascii_letters, 14), body(HEX, 40)
GCP_JSON = (
    '{"type": "service_account", "project_id": "shop-prod", "private_key_id": "'
    + GCP_KEY_ID
    + '", "client_email": "ci@shop-prod.iam.gserviceaccount.com"}'
)

SHAPES: list[tuple[str, str, tuple[str, ...]]] = [
    ("PEM block after a JWT", f"the token was {JWT}\n{PEM}", (JWT[-20:], *PEM_BODY)),
    ("URL user-info", f"mysql://admin:{URL_PW}@db.example.com:3306/app", (URL_PW,)),
    (
        "git remote with user:pw",
        f"git remote add origin https://alice:{GIT_PW}@github.com/a/b.git",
        (GIT_PW,),
    ),
    (
        "DATABASE_URL and REDIS_URL in a .env",
        f"DATABASE_URL=postgres://app:{DB_PW}@db:5432/app\nREDIS_URL=redis://:{REDIS_PW}@cache:6379/0",
        (DB_PW[5:], REDIS_PW),
    ),
    ("mysql -pPASSWORD", f"mysql -uroot -p{MYSQL_PW} app < dump.sql", (MYSQL_PW,)),
    ("sshpass -p", f"sshpass -p '{SSHPASS_PW}' ssh deploy@host", (SSHPASS_PW[6:],)),
    ("docker login -p", f"docker login -u bob -p {DOCKER_PW} registry.example.com", (DOCKER_PW,)),
    ("--password=", f"mongosh --password={FLAG_PW} --host db", (FLAG_PW,)),
    (".netrc", f"machine api.example.com\n  login bob\n  password {NETRC_PW}\n", (NETRC_PW,)),
    (".pgpass", f"db.example.com:5432:appdb:appuser:{PGPASS_PW}\n", (PGPASS_PW,)),
    ("SENTRY_DSN", f"SENTRY_DSN=https://{SENTRY_KEY}@o123.ingest.sentry.io/456", (SENTRY_KEY,)),
    (
        "connection string, quoted Password holding ;",
        f'Server=tcp:x.database.windows.net;Database=d;User Id=u;Password="{CONN_PW}";',
        (CONN_PW[3:],),
    ),
    ("value starting with #", f"DB_PASSWORD=#{HASH_PW}", (HASH_PW,)),
    ("value holding &", f"API_SECRET={AMP_PW}", (AMP_PW[3:],)),
    ("value holding (", f"ADMIN_PASSWORD={PAREN_PW}", (PAREN_PW[2:],)),
    ("…_SALT", f"APP_SALT={SALT}", (SALT,)),
    ("…_PASSPHRASE", f"GPG_PASSPHRASE={PASSPHRASE}", (PASSPHRASE[14:],)),
    ("…_SIGNING_KEY", f"WEBHOOK_SIGNING_KEY={SIGNING}", (SIGNING,)),
    ("Django SECRET_KEY", f"SECRET_KEY = '{DJANGO}'", (DJANGO[16:24], DJANGO[-12:])),
    ("base64 of a Stripe key", f"echo {_b64(STRIPE)} | base64 -d", (_b64(STRIPE)[8:40], STRIPE[8:])),
    ("base64 of an .npmrc", _b64(f"//registry.npmjs.org/:_authToken={NPM}\n"), (NPM[4:],)),
    (
        "base64 of a whole .env",
        "ENV_B64=" + _b64(f"DB_HOST=db\nDB_PASSWORD={ENV_PW}\nLOG_LEVEL=info\n"),
        (_b64(f"DB_HOST=db\nDB_PASSWORD={ENV_PW}\nLOG_LEVEL=info\n")[12:48],),
    ),
    (
        "Kubernetes Secret data values",
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\ndata:\n"
        f"  DATABASE_URL: {_b64(f'postgres://app:{K8S_PW}@db/app')}\n  password: {_b64(K8S_PW)}\n",
        (_b64(f"postgres://app:{K8S_PW}@db/app")[16:40], _b64(K8S_PW)),
    ),
    (
        "ghp_ token wrapped over three lines",
        f"remote: {GITHUB[:14]}\n{GITHUB[14:28]}\n{GITHUB[28:]}\n",
        (GITHUB[4:14], GITHUB[14:28], GITHUB[28:]),
    ),
    (
        "sk-ant- key split by a table border",
        f"│ key │ {ANTHROPIC[:40]} │\n│     │ {ANTHROPIC[40:]} │",
        (ANTHROPIC[14:40], ANTHROPIC[40:]),
    ),
    (
        "AWS secret split over two lines after its key id",
        f"aws_access_key_id = {AWS_ID}\naws_secret_access_key = {AWS_SECRET[:22]}\n{AWS_SECRET[22:]}",
        (AWS_ID[4:], AWS_SECRET[:22], AWS_SECRET[22:]),
    ),
    ("episodic token typed bare", f"use {EPI} for the server", (EPI[4:],)),
    *(
        (f"value starting with {c}", f"DB_PASSWORD={value}\nQUOTED_SECRET='{value}'", (value[1:],))
        for c, value in LEADING.items()
    ),
    ("Azure SAS sig starting with /", f'AZURE_SAS_TOKEN="{SAS_SIG}"', (SAS_SIG[1:-1],)),
    ("quoted value holding ( after letters", f'SMTP_PASSWORD="{QUOTED_PAREN_PW}"', (QUOTED_PAREN_PW[3:],)),
    ("URL password holding /", f"postgres://app:{URL_SLASH_PW}@db.example.com/app", (URL_SLASH_PW[3:],)),
    (
        "Kubernetes Secret data value under DB_PASS",
        f"kind: Secret\ndata:\n  DB_HOST: ZGI=\n  DB_PASS: {_b64(K8S_PASS)}\n",
        (_b64(K8S_PASS),),
    ),
    (".pgpass line then ; cmd", f"db:5432:app:u:{PGPASS_CMD_PW}; chmod 600 ~/.pgpass", (PGPASS_CMD_PW,)),
    (
        "AWS secret split 20/20 after a named key",
        f"aws_secret_access_key={AWS_SECRET_2[:20]}\n{AWS_SECRET_2[20:]}\nregion = eu-west-1",
        (AWS_SECRET_2[:20], AWS_SECRET_2[20:]),
    ),
    (
        "AWS secret split 20/20 on the lines after a key id",
        f"{AWS_ID}\n{AWS_SECRET_2[:20]}\n{AWS_SECRET_2[20:]}",
        (AWS_ID[4:], AWS_SECRET_2[:20], AWS_SECRET_2[20:]),
    ),
    ("PuTTY .ppk private lines", PPK, tuple(PPK_PRIVATE)),
    ("bare Discord bot token", f"client.run({DISCORD!r})", (DISCORD[3:24], DISCORD[-30:])),
    ("bare Telegram bot token", f"curl https://api.telegram.org/bot{TELEGRAM}/getMe", (TELEGRAM[13:],)),
    ("Firebase FCM server key", f"Authorization: key={FCM}", (FCM[11:],)),
    ("password in prose, with is", f"the admin password is {PROSE_PW} per the runbook", (PROSE_PW,)),
    (
        "password in prose, no =",
        f"I'll try password {PROSE_BARE_PW}. Then the other one",
        (PROSE_BARE_PW[10:],),
    ),
    (".pgpass line then # comment", f"db:6432:app:u:{PGPASS_CMD_PW} # staging", (PGPASS_CMD_PW,)),
    (
        "Django key read as a call, quoted",
        f'SECRET_KEY = "{DJANGO_PAREN}"',
        (DJANGO_PAREN[8:24], DJANGO_PAREN[-12:]),
    ),
    (
        "Django key read as a call, unquoted",
        f"SECRET_KEY={DJANGO_CALL}",
        (DJANGO_CALL[11:27], DJANGO_CALL[-12:]),
    ),
    ("value of . then letters", f"DB_PASSWORD={DOT_LETTERS}", (DOT_LETTERS[1:],)),
    ("quoted value of / then letters", f'API_SECRET="{SLASH_LETTERS}"', (SLASH_LETTERS[1:],)),
    (
        "AWS secret split 20/20, a head without digits",
        f"aws_secret_access_key={AWS_LETTERS_HEAD}\n{AWS_TAILS[0]}",
        (AWS_LETTERS_HEAD, AWS_TAILS[0]),
    ),
    (
        "AWS secret split 20/20, a head from /",
        f"aws_secret_access_key={AWS_SLASH_HEAD}\n{AWS_TAILS[1]}",
        (AWS_SLASH_HEAD[1:], AWS_TAILS[1]),
    ),
    ("letters-only password in prose", f"my password: {PROSE_LETTERS_PW}", (PROSE_LETTERS_PW,)),
    ("GCP private_key_id", GCP_JSON, (GCP_KEY_ID,)),
]

# what stays: the scrubber must not take these (ordinary prose and code near the new rules)
KEPT = [
    "mkdir -p /tmp/build && ssh -p 2222 deploy@host",
    "docker run -p 8080:80 nginx:1.27.3",
    "mysql -u root -p app",
    "git remote add origin https://github.com/a/b.git",
    "postgres://localhost:5432/app",
    "salt = bcrypt.gensalt()",
    "password = getpass.getpass()",
    "commit 3f2c1a9e8b7d6c5f4e3d2c1b0a9f8e7d6c5b4a39 (HEAD -> main)",
    "session 8f14e45f-ceea-467f-a8f1-9f3b4c1d2e7a resumed",
    "pip install requests==2.32.3 urllib3==2.2.2",
    "the machine learning model was trained on 5432 samples",
    # issue 52: references and paths as values of secret names stay
    "DB_PASSWORD=$HOME",
    "DB_PASSWORD=${DB_PASSWORD}",
    'API_TOKEN="$(cat /run/secrets/api_token)"',
    "SSH_KEY=~/.ssh/id_rsa",
    "SECRETS_FILE_PASSWORD=./config/secrets.env",
    "PRIVATE_KEY=/etc/ssl/private/server.key",
    'password = "%s"',
    "TOKEN=%(token)s",
    "SECRET_KEY=*.pem",
    "token = (message_id, key)",
    'password = "getpass()"',
    "open http://localhost:5173/@vite/client",
    "npm view https://registry.example.com:443/@scope/pkg",
    "--- PASS: TestLogin (0.00s)",
    "PASS: tests/unit/test_scrub.py",
    "bypass: true",
    "The password reset flow hashes with argon2id; password fields stay masked.",
    "password hashing with bcrypt2 and sha256",
    "Password v1.2.3 policy",
    "the password is stored in /etc/app/secrets.env",
    "password $DB_PASSWORD",
    # issue 60: calls, paths and names beside the new shapes stay
    "SECRET_KEY = get_random_secret_key()",
    "token = jwt.encode(payload, settings.SECRET_KEY, algorithm='HS256')",
    "API_TOKEN=os.environ.get('API_TOKEN')",
    "password = open(path).read().strip()",
    "password: SecretStr",
    "password = hashedPassword",
    "DB_PASSWORD=.pgpass",
    "DB_PASSWORD=/run/secrets/db_password",
    "PRIVATE_KEY=/Users/Shared/Keys/server.pem",
    "AWS_SECRET_ACCESS_KEY=$AWS_SECRET_ACCESS_KEY",
    "my password: changeme",
    "kms_key_id = alias/shop-prod",
    '"key_id": "2f1c0b7e9a8d4c3b"',
]

# what may stand between two secrets (issue 40): newline, escaped newline, space, quote, `=`, table borders
SEPARATORS = ["\n", "\\n", " ", '"', "'", "=", " | ", " \u2502 ", "\t"]


def pool() -> list[tuple[str, tuple[str, ...]]]:
    """Every shape and every catalogue token, as (text, the parts that must not survive)."""
    from kits.secret_kit import TOKENS

    return [(text, cores) for _, text, cores in SHAPES] + [(token, (token[-16:],)) for _, token in TOKENS]


def pairs(per_separator: int = 4, seed: int = 40) -> list[tuple[str, tuple[str, ...]]]:
    """Two secrets of random kinds side by side, `per_separator` pairs for each separator."""
    import random

    rng = random.Random(seed)
    items = pool()
    found = []
    for separator in SEPARATORS:
        for _ in range(per_separator):
            (a, a_cores), (b, b_cores) = rng.sample(items, 2)
            found.append((a + separator + b, a_cores + b_cores))
    return found
