"""Provider token formats with a distinctive prefix, as data: one row per format, each found by its
trigger literal and confirmed by one anchored regex (see `rules.TokenRule`).

Kept current from two maintained public catalogues, read and rewritten here (not copied): gitleaks'
default rules (`config/gitleaks.toml`, its rule id in `source`) and GitHub secret scanning's supported
patterns (`github:`). A format is added when its prefix is distinctive enough to find without a name
beside it; formats that need a provider's name next to them (`TWITTER_SECRET=…`) are left to the
keyword rules. `tests/unit/scrub/test_scrub_catalogue.py` plants one token of every row and fails for a row
without one, and the real-transcript runs in `tests/unit/scrub/test_scrub.py` guard against false positives.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from episodic.scrub.rules import TokenRule

_END = r"(?![A-Za-z0-9])"  # a token ends where its alphabet does
_END_WORD = r"(?![A-Za-z0-9_-])"


@dataclass(frozen=True)
class Format:
    provider: str
    kind: str  # the placeholder: [REDACTED:<kind>]
    literals: tuple[str, ...]  # trigger literals, each at `back` characters into the token
    regex: str
    source: str  # the catalogue row it follows
    back: int = 0


CATALOGUE: tuple[Format, ...] = (
    Format("DigitalOcean", "digitalocean-token", ("_v1_",), r"do[opr]_v1_[a-f0-9]{64}" + _END,
           "gitleaks:digitalocean-pat,-access-token,-refresh-token", back=3),
    Format("Docker Hub", "docker-token", ("dckr_",), r"dckr_(?:pat|oat)_[A-Za-z0-9_-]{24,}",
           "github:docker_personal_access_token"),
    Format("HashiCorp Vault", "vault-token", ("hvs.", "hvb."), r"hv[sb]\.[A-Za-z0-9_-]{24,300}" + _END_WORD,
           "gitleaks:vault-service-token,vault-batch-token"),
    Format("HashiCorp Terraform Cloud", "terraform-token", (".atlasv1.",),
           r"[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,70}", "gitleaks:hashicorp-tf-api-token", back=14),
    Format("Twilio", "twilio-key", ("SK",), r"SK[0-9a-fA-F]{32}" + _END, "gitleaks:twilio-api-key"),
    Format("age", "age-secret-key", ("AGE-SECRET-KEY-1",),
           r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}", "gitleaks:age-secret-key"),
    Format("Databricks", "databricks-token", ("dapi",), r"dapi[a-f0-9]{32}(?:-[0-9])?" + _END,
           "gitleaks:databricks-api-token"),
    Format("Shopify", "shopify-token", ("shpat_", "shpca_", "shppa_", "shpss_"), r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}" + _END,
           "gitleaks:shopify-access-token,-custom-,-private-app-,-shared-secret"),
    Format("Linear", "linear-key", ("lin_api_",), r"lin_api_[A-Za-z0-9]{40}" + _END, "gitleaks:linear-api-key"),
    Format("OpenRouter", "openrouter-key", ("sk-or-",), r"sk-or-v1-[a-f0-9]{64}" + _END,
           "github:openrouter_api_key"),
    Format("Perplexity", "perplexity-key", ("pplx-",), r"pplx-[A-Za-z0-9]{48}" + _END, "gitleaks:perplexity-api-key"),
    Format("Groq", "groq-key", ("gsk_",), r"gsk_[A-Za-z0-9]{48,56}" + _END, "github:groq_api_key"),
    Format("xAI", "xai-key", ("xai-",), r"xai-[A-Za-z0-9]{70,90}" + _END, "github:xai_api_key"),
    Format("Replicate", "replicate-token", ("r8_",), r"r8_[A-Za-z0-9]{37}" + _END, "github:replicate_api_token"),
    Format("Pinecone", "pinecone-key", ("pcsk_",), r"pcsk_[A-Za-z0-9_]{50,100}" + _END, "github:pinecone_api_key"),
    Format("LangSmith", "langsmith-key", ("lsv2_",), r"lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}" + _END,
           "github:langchain_api_key"),
    Format("Hugging Face", "huggingface-token", ("api_org_",), r"api_org_[A-Za-z]{34}" + _END,
           "gitleaks:huggingface-organization-api-token"),
    Format("GitLab", "gitlab-token",
           ("gldt-", "glrt-", "glptt-", "gloas-", "glft-", "glcbt-", "glimt-", "glagent-", "glsoat-", "glffct-"),
           r"gl(?:dt|rt|ptt|oas|ft|cbt|imt|agent|soat|ffct)-[0-9A-Za-z_.-]{20,300}",
           "gitleaks:gitlab-deploy-token,-runner-,-ptt,-oauth-app-secret,-feed-,-cicd-job-,-incoming-mail-,"
           "-kubernetes-agent-,-scim-,-feature-flag-client-token"),
    Format("Grafana", "grafana-token", ("glsa_", "glc_"),
           r"(?:glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|glc_[A-Za-z0-9+/]{32,400}={0,3})" + _END,
           "gitleaks:grafana-service-account-token,grafana-cloud-api-token"),
    Format("Sentry", "sentry-token", ("sntry",),
           r"(?:sntryu_[a-f0-9]{64}|sntrys_eyJ[A-Za-z0-9+/=_]{50,600})" + _END,
           "gitleaks:sentry-user-token,sentry-org-token"),
    Format("PlanetScale", "planetscale-token", ("pscale_",), r"pscale_(?:tkn|oauth|pw)_[A-Za-z0-9_=.-]{32,64}",
           "gitleaks:planetscale-api-token,-oauth-token,-password"),
    Format("RubyGems", "rubygems-token", ("rubygems_",), r"rubygems_[a-f0-9]{48}" + _END,
           "gitleaks:rubygems-api-token"),
    Format("Prefect", "prefect-token", ("pnu_",), r"pnu_[A-Za-z0-9]{36}" + _END, "gitleaks:prefect-api-token"),
    Format("Notion", "notion-token", ("ntn_",), r"ntn_[0-9]{11}[A-Za-z0-9]{35}" + _END, "gitleaks:notion-api-token"),
    Format("Brevo (Sendinblue)", "brevo-key", ("xkeysib-",), r"xkeysib-[a-f0-9]{64}-[A-Za-z0-9]{16}" + _END,
           "gitleaks:sendinblue-api-token"),
    Format("Postman", "postman-key", ("PMAK-",), r"PMAK-[A-Fa-f0-9]{24}-[A-Fa-f0-9]{34}" + _END,
           "gitleaks:postman-api-token"),
    Format("Doppler", "doppler-token", ("dp.pt.", "dp.st.", "dp.sa.", "dp.ct."),
           r"dp\.(?:pt|st|sa|ct)\.[A-Za-z0-9_.-]{40,}", "gitleaks:doppler-api-token"),
    Format("Dynatrace", "dynatrace-token", ("dt0c01.",), r"dt0c01\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{64}" + _END,
           "gitleaks:dynatrace-api-token"),
    Format("Heroku", "heroku-key", ("HRKU-",), r"HRKU-AA[0-9A-Za-z_-]{58}" + _END_WORD, "gitleaks:heroku-api-key-v2"),
    Format("1Password", "onepassword-token", ("ops_eyJ",), r"ops_eyJ[A-Za-z0-9+/]{250,}={0,3}",
           "gitleaks:1password-service-account-token"),
    Format("JFrog Artifactory", "artifactory-key", ("AKCp",), r"AKCp[A-Za-z0-9]{69}" + _END,
           "gitleaks:artifactory-api-key"),
    Format("Slack", "slack-token", ("xapp-",), r"xapp-[0-9]-[A-Z0-9]+-[0-9]+-[a-z0-9]+" + _END,
           "gitleaks:slack-app-token"),
    Format("Amazon Bedrock", "aws-bedrock-key", ("ABSK",), r"ABSK[A-Za-z0-9+/]{109,269}={0,2}",
           "gitleaks:aws-amazon-bedrock-api-key-long-lived"),
    Format("Stripe", "stripe-key", ("k_prod_",), r"[sr]k_prod_[A-Za-z0-9]{10,99}" + _END,
           "gitleaks:stripe-access-token", back=1),
    Format("Azure AD", "azure-secret", ("Q~",), r"[A-Za-z0-9_~.]{3}[0-9]Q~[A-Za-z0-9_~.-]{31,34}" + _END,
           "gitleaks:azure-ad-client-secret", back=4),
    Format("Tailscale", "tailscale-key", ("tskey-",),
           r"tskey-(?:auth|api|client|scim|webhook)-[A-Za-z0-9]+-[A-Za-z0-9]{16,}" + _END,
           "github:tailscale_api_key"),
    Format("Supabase", "supabase-key", ("sbp_", "sb_secret_"),
           r"(?:sbp_[a-f0-9]{40}|sb_secret_[A-Za-z0-9_-]{20,})" + _END, "github:supabase_service_key"),
    Format("Fly.io", "flyio-token", ("fo1_", "fm2_"),
           r"(?:fo1_[A-Za-z0-9_-]{43}|fm2_[A-Za-z0-9+/]{100,}={0,3})", "gitleaks:flyio-access-token"),
    Format("Square", "square-token", ("sq0atp-", "sq0csp-"), r"sq0(?:atp|csp)-[A-Za-z0-9_-]{22,60}" + _END_WORD,
           "gitleaks:square-access-token"),
    Format("Google OAuth", "google-oauth", ("GOCSPX-", "ya29."),
           r"(?:GOCSPX-[A-Za-z0-9_-]{28}|ya29\.[A-Za-z0-9_-]{30,})" + _END_WORD,
           "github:google_oauth_client_secret,google_oauth_access_token"),
    Format("Atlassian", "atlassian-token", ("ATATT3",), r"ATATT3[A-Za-z0-9_=-]{150,250}",
           "gitleaks:atlassian-api-token"),
    Format("Pulumi", "pulumi-token", ("pul-",), r"pul-[a-f0-9]{40}" + _END, "gitleaks:pulumi-api-token"),
    Format("Mapbox", "mapbox-token", ("sk.eyJ",), r"sk\.eyJ[A-Za-z0-9_-]{50,}\.[A-Za-z0-9_-]{20,}",
           "github:mapbox_secret_access_token"),
    Format("New Relic", "newrelic-key", ("NRAK-",), r"NRAK-[A-Z0-9]{27}" + _END, "gitleaks:new-relic-user-api-key"),
    Format("Figma", "figma-token", ("figd_",), r"figd_[A-Za-z0-9_-]{40,}", "github:figma_pat"),
    Format("Contentful", "contentful-token", ("CFPAT-",), r"CFPAT-[A-Za-z0-9_-]{43}", "github:contentful_pat"),
    Format("Netlify", "netlify-token", ("nfp_",), r"nfp_[A-Za-z0-9]{36}" + _END, "github:netlify_access_token"),
    Format("Buildkite", "buildkite-token", ("bkua_",), r"bkua_[a-f0-9]{40}" + _END, "github:buildkite_token"),
    Format("CircleCI", "circleci-token", ("CCIPAT_",), r"CCIPAT_[A-Za-z0-9]{22}_[a-f0-9]{40}" + _END,
           "github:circleci_personal_access_token"),
)  # fmt: skip


def catalogue_rules() -> list[tuple[tuple[str, ...], TokenRule]]:
    return [(row.literals, TokenRule(row.kind, re.compile(row.regex), row.back)) for row in CATALOGUE]


def catalogue_kinds() -> tuple[str, ...]:
    return tuple(dict.fromkeys(row.kind for row in CATALOGUE))
