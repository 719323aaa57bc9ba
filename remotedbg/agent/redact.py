"""Secrets in command lines and free text: one rule set for the agent (process command lines)
and the client (the transcript). A flag or variable whose last word names a secret keeps its
name and loses its value; so do auth headers, URL passwords, `-u user:pw`, `mysql -pPW` and
token shapes that announce themselves."""

from __future__ import annotations

import re
import shlex

# --api-key, --admin-api-key, --hf-token, --password; not --speculative-token-map,
# --max-total-tokens or --tokenizer-path
SECRET_WORDS = (
    r"(?:key|apikey|token|secret|secrets|password|passwd|pass|pw|pwd|credential|credentials|auth)"
)
SECRET_FLAG_RE = re.compile(r"(?:^|[-_])" + SECRET_WORDS + r"$", re.I)
MAX_CMDLINE_CHARS = 2000


def is_secret_flag(name):
    return bool(SECRET_FLAG_RE.search(name))


def redact_argv(argv):
    """argv with the values of secret flags replaced by ***, word for word."""
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
        out.append(word)
    return out


def redact_cmdline(argv):
    """The command line as one string for display, secret flag values replaced by ***, cut at
    MAX_CMDLINE_CHARS. Only words with spaces are quoted: it is for reading, not for splitting
    again (a JSON word keeps its inner quotes unescaped); parse the argv itself."""
    out = redact_argv(argv)
    line = " ".join(shlex.quote(w) if (" " in w or not w) else w for w in out)
    if len(line) > MAX_CMDLINE_CHARS:
        line = line[:MAX_CMDLINE_CHARS] + "..."
    return line


_VALUE = r"(\"[^\"]*\"|'[^']*'|[^\s\"']+)"
_TEXT_REDACTIONS = [
    # --api-key=V, --admin-api-key V, --passwd V: a flag whose last word names a secret
    (
        re.compile(r"(?i)(--?(?:[a-z0-9][a-z0-9_-]*[-_])?" + SECRET_WORDS + r")(=|\s+)" + _VALUE),
        r"\1\2***",
    ),
    # MY_PW=..., HF_TOKEN=..., export API_KEY=...: an assignment whose last word names a secret
    (
        re.compile(
            r"(?i)\b((?:[A-Za-z0-9]+_)*"
            + SECRET_WORDS
            + r"|[A-Za-z0-9_]*(?:password|passwd|secret|token|apikey|credentials?))="
            + _VALUE
        ),
        r"\1=***",
    ),
    # Authorization: Bearer x / Basic x, X-Api-Key: x, Cookie: x (to the end of the value)
    (
        re.compile(
            r"(?i)((?:authorization|proxy-authorization|cookie|x-[a-z0-9-]*(?:key|token|secret))"
            r"\s*:\s*)([^\"'\n]+)"
        ),
        r"\1***",
    ),
    (re.compile(r"(?i)(bearer\s+)([A-Za-z0-9._~+/=-]+)"), r"\1***"),
    # scheme://user:password@host
    (re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://[^/\s:@]+:)([^/\s@]+)(@)"), r"\1***\3"),
    # curl -u user:password, --user user:password
    (re.compile(r"(\s(?:-u|--user)\s+[^\s:]+:)(\S+)"), r"\1***"),
    # mysql/mariadb -pPASSWORD (the password glued to -p)
    (re.compile(r"(?i)(\b(?:mysql|mariadb|mysqldump|mysqladmin)\b[^\n]*?\s-p)(\S+)"), r"\1***"),
    # JSON: "api_key": "V", "hf_token": "V" (agent call arguments in the transcript)
    (
        re.compile(r'(?i)("(?:[a-z0-9]+[-_])*' + SECRET_WORDS + r'"\s*:\s*)"(?:[^"\\]|\\.)*"'),
        r'\1"***"',
    ),
    # token shapes that announce themselves (Hugging Face, GitHub, OpenAI-style, AWS keys)
    (re.compile(r"\b(hf_|ghp_|gho_|ghs_|github_pat_|sk-|xox[bp]-)[A-Za-z0-9_-]{8,}"), r"\1***"),
    (re.compile(r"\b(AKIA)[A-Z0-9]{16}\b"), r"\1***"),
]


def redact_text(text):
    """Free text (a command as typed, a label) with every secret value replaced by ***."""
    for pattern, replacement in _TEXT_REDACTIONS:
        text = pattern.sub(replacement, text)
    return text
