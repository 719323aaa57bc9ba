"""Secrets in command lines and free text: one rule set for the agent (process command lines)
and the client (the transcript). A flag or variable whose last word names a secret keeps its
name and loses its value; so do auth headers, URL passwords, `-u user:pw`, `mysql -pPW` and
token shapes that announce themselves, and the positional passwords of a few tools (`docker
login -p`, `sshpass -p`, `redis-cli -a`, `aws configure set aws_secret_access_key`): one table,
SHAPES."""

from __future__ import annotations

import re
import shlex

# --api-key, --admin-api-key, --hf-token, --password; not --speculative-token-map,
# --max-total-tokens or --tokenizer-path
SECRET_WORDS = (
    r"(?:key|apikey|token|secret|secrets|password|passwd|pass|pw|pwd|credential|credentials"
    r"|auth|bearer)"
)
SECRET_FLAG_RE = re.compile(r"(?:^|[-_])" + SECRET_WORDS + r"$", re.I)
MAX_CMDLINE_CHARS = 2000


def is_secret_flag(name):
    return bool(SECRET_FLAG_RE.search(name))


def redact_argv(argv):
    """argv with every secret replaced by ***, word for word: the values of secret flags, the
    values of secret environment assignments (`env HF_TOKEN=x python ...`, `docker run -e
    OPENAI_API_KEY=sk-x`), secret-named keys inside a JSON word (`--speculative-config
    {"hf_token": ...}`) and words that are tokens of an announced shape (`sk-...`, `hf_...`)."""
    out = []
    hide = False
    for word in argv:
        if hide:
            out.append("***")
            hide = False
            continue
        if word.startswith("-") and is_secret_flag(word.lstrip("-").split("=", 1)[0]):
            if "=" in word:
                out.append(word.split("=", 1)[0] + "=***")
            else:
                out.append(word)
                hide = True
            continue
        out.append(redact_word(word))
    return out


def redact_word(word):
    """One argv word that is not a flag: its secret, if it holds one, replaced by ***. A word
    with spaces is a command line of its own (`bash -c "..."`, `sh -c`, `su -c`): free text."""
    if any(c in word for c in " \t\n") and not word.lstrip().startswith(("{", "[")):
        return redact_text(word)
    assigned = _ASSIGNMENT_WORD.match(word)
    if assigned:
        return assigned.group(1) + "=***"
    if word.lstrip().startswith(("{", "[")):
        return _JSON_SECRET.sub(r'\1"***"', word)
    token = _TOKEN_WORD.match(word)
    if token:
        return token.group(1) + "***"
    return word


def redact_cmdline(argv):
    """The command line as one string for display, secret flag values replaced by ***, cut at
    MAX_CMDLINE_CHARS. Only words with spaces are quoted: it is for reading, not for splitting
    again (a JSON word keeps its inner quotes unescaped); parse the argv itself."""
    out = redact_argv(argv)
    line = " ".join(shlex.quote(w) if (" " in w or not w) else w for w in out)
    if len(line) > MAX_CMDLINE_CHARS:
        line = line[:MAX_CMDLINE_CHARS] + "..."
    return line


# quoted, or up to a space, a quote, a comma or a closing parenthesis (a repr's `k=v, ...)`)
_VALUE = r"(\"[^\"]*\"|'[^']*'|[^\s\"',)]+)"
_ENV_SECRET = r"[A-Za-z0-9_]*(?:password|passwd|secret)[A-Za-z0-9_]*"  # *_SECRET*, PGPASSWORD
_LOGIN_TOOLS = r"(?:docker|podman|nerdctl|buildah|skopeo|helm\s+registry|oras)\s+login"

#: Every shape a secret comes in, as (name, pattern, replacement), applied in this order. Each
#: name has its test case in tests/test_transcript.py (a name without one fails the suite).
SHAPES = [
    # --api-key=V, --admin-api-key V, --passwd V, --password=V: a flag whose last word names
    # a secret
    (
        "secret-flag",
        re.compile(r"(?i)(--?(?:[a-z0-9][a-z0-9_-]*[-_])?" + SECRET_WORDS + r")(=|\s+)" + _VALUE),
        r"\1\2***",
    ),
    # MY_PW=..., HF_TOKEN=..., export API_KEY=...: an assignment whose last word names a secret
    (
        "secret-assignment",
        re.compile(
            r"(?i)\b((?:[A-Za-z0-9]+_)*"
            + SECRET_WORDS
            + r"|[A-Za-z0-9_]*(?:token|apikey|credentials?)|"
            + _ENV_SECRET
            + r")="
            + _VALUE
        ),
        r"\1=***",
    ),
    # Authorization: Bearer x / Basic x, X-Api-Key: x, api-key: x, Private-Token: x, Cookie: x
    (
        "auth-header",
        re.compile(
            r"(?i)(\b(?:authorization|proxy-authorization|cookie|set-cookie|"
            r"(?:[a-z0-9]+-)+(?:key|apikey|token|secret|auth|password|pass))"
            r"\s*:\s*)([^\"'\n]+)"
        ),
        r"\1***",
    ),
    ("bearer", re.compile(r"(?i)(bearer\s+)([A-Za-z0-9._~+/=-]+)"), r"\1***"),
    # scheme://user:password@host
    (
        "url-password",
        re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://[^/\s:@]+:)([^/\s@]+)(@)"),
        r"\1***\3",
    ),
    # curl -u user:password, --user user:password
    ("user-colon-password", re.compile(r"(\s(?:-u|--user)\s+[^\s:]+:)(\S+)"), r"\1***"),
    # mysql/mariadb -pPASSWORD (the password glued to -p)
    (
        "mysql-p",
        re.compile(r"(?i)(\b(?:mysql|mariadb|mysqldump|mysqladmin)\b[^\n]*?\s-p)(\S+)"),
        r"\1***",
    ),
    # docker login -p V (podman, nerdctl, helm registry login ...), -pV
    (
        "registry-login-p",
        re.compile(r"(?i)(\b" + _LOGIN_TOOLS + r"\b[^\n|;&]*?\s-p)(\s+|=)?" + _VALUE),
        r"\1\2***",
    ),
    # sshpass -p V, sshpass -pV
    ("sshpass-p", re.compile(r"(\bsshpass\b[^\n|;&]*?\s-p)(\s*)" + _VALUE), r"\1\2***"),
    # redis-cli -a V, -aV (valkey-cli too)
    (
        "redis-cli-a",
        re.compile(r"(\b(?:redis|valkey|keydb)-cli\b[^\n|;&]*?\s-a)(\s*)" + _VALUE),
        r"\1\2***",
    ),
    # aws configure set aws_secret_access_key V, npm config set _authToken V,
    # git config user.password V
    (
        "config-set",
        re.compile(
            r"(?i)(\b(?:configure\s+set|config\s+set|config(?:\s+--[a-z-]+)*)\s+"
            r"(?:[A-Za-z0-9_.:/-]*?)" + SECRET_WORDS + r"\s+)" + _VALUE
        ),
        r"\1***",
    ),
    # openssl -passin pass:V, -passout pass:V
    ("openssl-pass", re.compile(r"(?i)(\s-pass(?:in|out)?\s+pass:)(\S+)"), r"\1***"),
    # JSON: "api_key": "V", "hf_token": "V" (agent call arguments in the transcript)
    (
        "json-secret-key",
        re.compile(r'(?i)("(?:[a-z0-9]+[-_])*' + SECRET_WORDS + r'"\s*:\s*)"(?:[^"\\]|\\.)*"'),
        r'\1"***"',
    ),
    # a Python dict's repr, as vLLM logs its arguments: {'api_key': 'V'} (non-default args)
    (
        "repr-secret-key",
        re.compile(r"(?i)('(?:[a-z0-9]+[-_])*" + SECRET_WORDS + r"'\s*:\s*)'(?:[^'\\]|\\.)*'"),
        r"\1'***'",
    ),
    # token shapes that announce themselves (Hugging Face, GitHub, OpenAI-style, Slack, GitLab)
    (
        "token-prefix",
        re.compile(
            r"\b(hf_|ghp_|gho_|ghs_|ghu_|github_pat_|glpat-|sk-|xox[abpr]-)[A-Za-z0-9_-]{8,}"
        ),
        r"\1***",
    ),
    ("aws-access-key-id", re.compile(r"\b(AKIA|ASIA)[A-Z0-9]{16}\b"), r"\1***"),
]


def redact_text(text):
    """Free text (a command as typed, a label) with every secret value replaced by ***."""
    for _name, pattern, replacement in SHAPES:
        text = pattern.sub(replacement, text)
    return text


_SHAPE = {name: pattern for name, pattern, _replacement in SHAPES}
_JSON_SECRET = _SHAPE["json-secret-key"]
# the whole word is NAME=VALUE with a secret NAME (an environment assignment in argv)
_ASSIGNMENT_WORD = re.compile(
    r"(?is)^((?:[A-Za-z0-9]+_)*" + SECRET_WORDS
    + r"|[A-Za-z0-9_]*(?:token|apikey|credentials?)|" + _ENV_SECRET + r")=(.+)$"
)  # fmt: skip
# the whole word is a token of an announced shape (a path that holds one is left alone)
_TOKEN_WORD = re.compile(r"^(hf_|ghp_|gho_|ghs_|ghu_|github_pat_|glpat-|sk-|xox[abpr]-)"
                         r"[A-Za-z0-9_-]{8,}$")  # fmt: skip
