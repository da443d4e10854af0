"""Planted secrets of every provider format in the scrubber's catalogue (issue 31), shared by the unit
table (`unit/test_scrub_catalogue.py`) and the end-to-end flows (`adversarial/test_scrub_flows.py`).

Tokens are assembled at run time from a seeded random body, so that no secret scanner flags these files.
"""

from __future__ import annotations

import random
import string

_RNG = random.Random(31)
HEX = "0123456789abcdef"
ALNUM = string.ascii_letters + string.digits
B64URL = ALNUM + "_-"
BECH32 = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"


def body(alphabet: str, n: int) -> str:
    """Random characters, with a digit, an upper and a lower case letter where the alphabet has them."""
    while True:
        value = "".join(_RNG.choices(alphabet, k=n))
        kinds = [
            set(value) & set(part) for part in (string.digits, string.ascii_uppercase, string.ascii_lowercase)
        ]
        if all(
            k or not set(alphabet) & set(part)
            for k, part in zip(
                kinds, (string.digits, string.ascii_uppercase, string.ascii_lowercase), strict=True
            )
        ):
            return value


# (provider as in the catalogue, a token of its format)
TOKENS: list[tuple[str, str]] = [
    ("DigitalOcean", "dop_v1_" + body(HEX, 64)),
    ("DigitalOcean", "dor_v1_" + body(HEX, 64)),
    ("Docker Hub", "dckr_pat_" + body(B64URL, 27)),
    ("HashiCorp Vault", "hvs." + body(ALNUM, 24)),
    ("HashiCorp Vault", "hvs.CAESI" + body(B64URL, 90)),
    ("HashiCorp Vault", "hvb." + body(B64URL, 140)),
    ("HashiCorp Terraform Cloud", body(ALNUM, 14) + ".atlasv1." + body(B64URL, 64)),
    ("Twilio", "SK" + body(HEX, 32)),
    ("age", "AGE-SECRET-KEY-1" + body(BECH32, 58)),
    ("Databricks", "dapi" + body(HEX, 32)),
    ("Databricks", "dapi" + body(HEX, 32) + "-2"),
    ("Shopify", "shpat_" + body(HEX, 32)),
    ("Shopify", "shpss_" + body(HEX, 32)),
    ("Linear", "lin_api_" + body(ALNUM, 40)),
    ("OpenRouter", "sk-or-v1-" + body(HEX, 64)),
    ("Perplexity", "pplx-" + body(ALNUM, 48)),
    ("Groq", "gsk_" + body(ALNUM, 52)),
    ("xAI", "xai-" + body(ALNUM, 80)),
    ("Replicate", "r8_" + body(ALNUM, 37)),
    ("Pinecone", "pcsk_" + body(ALNUM, 6) + "_" + body(ALNUM, 60)),
    ("LangSmith", "lsv2_pt_" + body(HEX, 32) + "_" + body(HEX, 10)),
    ("Hugging Face", "api_org_" + body(string.ascii_letters, 34)),
    ("GitLab", "glrt-" + body(B64URL, 20)),
    ("GitLab", "gldt-" + body(B64URL, 20)),
    ("GitLab", "glptt-" + body(HEX, 40)),
    ("Grafana", "glsa_" + body(ALNUM, 32) + "_" + body(HEX, 8)),
    ("Grafana", "glc_" + body(ALNUM, 60) + "=="),
    ("Sentry", "sntryu_" + body(HEX, 64)),
    ("PlanetScale", "pscale_tkn_" + body(B64URL, 43)),
    ("RubyGems", "rubygems_" + body(HEX, 48)),
    ("Prefect", "pnu_" + body(ALNUM, 36)),
    ("Notion", "ntn_" + body(string.digits, 11) + body(ALNUM, 35)),
    ("Brevo (Sendinblue)", "xkeysib-" + body(HEX, 64) + "-" + body(ALNUM, 16)),
    ("Postman", "PMAK-" + body(HEX, 24) + "-" + body(HEX, 34)),
    ("Doppler", "dp.pt." + body(ALNUM, 43)),
    ("Dynatrace", "dt0c01." + body(ALNUM, 24) + "." + body(ALNUM, 64)),
    ("Heroku", "HRKU-AA" + body(B64URL, 58)),
    ("1Password", "ops_eyJ" + body(ALNUM + "+/", 260)),
    ("JFrog Artifactory", "AKCp" + body(ALNUM, 69)),
    (
        "Slack",
        "xapp-1-A"
        + body(string.ascii_uppercase + string.digits, 10)
        + "-4"
        + body(string.digits, 12)
        + "-"
        + body(HEX, 64),
    ),
    ("Amazon Bedrock", "ABSK" + body(ALNUM + "+/", 132)),
    ("Stripe", "sk_prod_" + body(ALNUM, 24)),
    ("Azure AD", "a1b8Q~" + body(ALNUM + "_~.-", 34)),
    ("Tailscale", "tskey-auth-k" + body(ALNUM, 10) + "-" + body(ALNUM, 30)),
    ("Supabase", "sbp_" + body(HEX, 40)),
    ("Supabase", "sb_secret_" + body(B64URL, 32)),
    ("Fly.io", "fo1_" + body(B64URL, 43)),
    ("Square", "sq0atp-" + body(B64URL, 22)),
    ("Google OAuth", "GOCSPX-" + body(B64URL, 28)),
    ("Google OAuth", "ya29.a0" + body(B64URL, 60)),
    ("Atlassian", "ATATT3" + body(B64URL, 180)),
    ("Pulumi", "pul-" + body(HEX, 40)),
    ("Mapbox", "sk.eyJ" + body(B64URL, 60) + "." + body(B64URL, 22)),
    ("New Relic", "NRAK-" + body(string.ascii_uppercase + string.digits, 27)),
    ("Figma", "figd_" + body(B64URL, 40)),
    ("Contentful", "CFPAT-" + body(B64URL, 43)),
    ("Netlify", "nfp_" + body(ALNUM, 36)),
    ("Buildkite", "bkua_" + body(HEX, 40)),
    ("CircleCI", "CCIPAT_" + body(ALNUM, 22) + "_" + body(HEX, 40)),
]


def _openai_project_key() -> str:
    """An OpenAI project key whose last `-` falls within its final 7 characters (issue 31: 1 in 8 keys)."""
    return "sk-proj-" + body(ALNUM + "_", 150) + "-" + body(ALNUM, 4)


AWS_KEY_ID = "AKIA" + body(string.ascii_uppercase + "234567", 16)
AWS_SECRET = body(ALNUM + "/+", 40)
# shaped like an AWS secret but with fewer distinct characters (3.5 to 4.3 bits/char): caught only
# beside, or in the session of, an access key id
AWS_SECRET_LOW = "wJalrXUtnFEM" * 3 + "I/K7"
GITHUB_SPLIT = "ghp_" + body(ALNUM, 36)
OPENAI_PROJECT = _openai_project_key()
VAULT = "hvs." + body(ALNUM, 24)
SAS_SIG = "%2B" + body(ALNUM, 40) + "%3D"
# (what it is, the planted text, the secrets that must not survive) for the issue's split and unlabelled cases
ISSUE_CASES: list[tuple[str, str, tuple[str, ...]]] = [
    ("openai project key, last - near the end", f"OPENAI_API_KEY={OPENAI_PROJECT}", (OPENAI_PROJECT[8:],)),
    ("openai project key, bare", f"the key {OPENAI_PROJECT} failed", (OPENAI_PROJECT[8:],)),
    ("vault token as VAULT_TOKEN", f"export VAULT_TOKEN={VAULT}", (VAULT[4:],)),
    (
        "github token cut by a newline",
        f"my token is {GITHUB_SPLIT[:14]}\n{GITHUB_SPLIT[14:]} ok",
        (GITHUB_SPLIT[4:14], GITHUB_SPLIT[14:]),
    ),
    (
        "azure SAS sig starting %2B",
        f"https://acct.blob.core.windows.net/c/b?sv=2022-11-02&sp=r&sig={SAS_SIG} is the link",
        (SAS_SIG[3:-3],),
    ),
    ("bare AWS secret, no key id", f"the value was {AWS_SECRET} yesterday", (AWS_SECRET,)),
]
