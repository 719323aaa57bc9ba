"""Secrets in command lines: flags whose last word names a secret, and their values."""

from __future__ import annotations

import re
import shlex

# --api-key, --admin-api-key, --hf-token, --password; not --speculative-token-map,
# --max-total-tokens or --tokenizer-path
SECRET_FLAG_RE = re.compile(
    r"(?:^|[-_])(?:key|token|secret|secrets|password|passwd|credential|credentials|auth)$", re.I
)
MAX_CMDLINE_CHARS = 2000


def is_secret_flag(name):
    return bool(SECRET_FLAG_RE.search(name))


def redact_cmdline(argv):
    """The command line as one shell-quoted string, secret flag values replaced by ***,
    cut at MAX_CMDLINE_CHARS."""
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
    line = " ".join(shlex.quote(w) if (" " in w or not w) else w for w in out)
    if len(line) > MAX_CMDLINE_CHARS:
        line = line[:MAX_CMDLINE_CHARS] + "..."
    return line
