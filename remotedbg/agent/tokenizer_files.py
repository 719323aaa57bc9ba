"""The identity of a model folder's tokenizer, read in place: which tokens have which ids, and
the special tokens. Runs on the box; read-only.

`fingerprints(args)` with {"paths": [model dir or config.json, ...]} returns {path: entry},
each entry {"present": bool, "files": [...], "vocab_size", "vocab_sha256" (of the base
token -> id map), "added": {token: id}, "special": {"bos"/"eos"/"pad"/"unk": token},
"special_ids": {...}, "error"}. A tokenizer.json of a Hugging Face fast tokenizer is read
(model.vocab, added_tokens); tokenizer_config.json names the special tokens; config.json gives
the *_token_id fields.
"""

from __future__ import annotations

import hashlib
import json
import os

_MAX_TOKENIZER_BYTES = 64 << 20
_SPECIAL = ("bos", "eos", "pad", "unk")


def _folder(path):
    path = os.path.expanduser(path)
    return os.path.dirname(path) if path.endswith(".json") else path


def _load(path, limit):
    try:
        if os.path.getsize(path) > limit:
            return None, "%s is larger than %d bytes: not read" % (path, limit)
        with open(path, "rb") as handle:
            return json.loads(handle.read().decode("utf-8")), None
    except (OSError, ValueError) as exc:
        return None, "%s: %s" % (path, getattr(exc, "strerror", None) or exc)


def _token_text(value):
    if isinstance(value, dict):
        return value.get("content")
    return value if isinstance(value, str) else None


def _chat_template_digest(folder, tokenizer_config):
    """sha256 of the chat template(s) a folder ships: tokenizer_config.json's "chat_template"
    (a string, or a list of {"name", "template"}), else chat_template.jinja / .json."""
    template = (tokenizer_config or {}).get("chat_template")
    if isinstance(template, list):
        template = json.dumps(sorted((t.get("name"), t.get("template")) for t in template
                                     if isinstance(t, dict)))  # fmt: skip
    if not isinstance(template, str):
        for name in ("chat_template.jinja", "chat_template.json"):
            try:
                with open(os.path.join(folder, name), "rb") as handle:
                    template = handle.read(8 << 20).decode("utf-8", "replace")
                    break
            except OSError:
                continue
    if not isinstance(template, str) or not template:
        return None
    return hashlib.sha256(template.encode("utf-8")).hexdigest()


def fingerprint(path):
    folder = _folder(path)
    entry = {"present": False, "files": [], "vocab_size": None, "vocab_sha256": None,
             "added": {}, "special": {}, "special_ids": {}, "chat_template_sha256": None,
             "error": None}  # fmt: skip
    names = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model", "vocab.json")
    entry["files"] = [n for n in names if os.path.isfile(os.path.join(folder, n))]
    entry["present"] = bool(entry["files"])
    tokenizer, error = (None, None)
    if "tokenizer.json" in entry["files"]:
        tokenizer, error = _load(os.path.join(folder, "tokenizer.json"), _MAX_TOKENIZER_BYTES)
    if error:
        entry["error"] = error
    if isinstance(tokenizer, dict):
        vocab = (tokenizer.get("model") or {}).get("vocab")
        if isinstance(vocab, list):  # unigram: [[piece, score], ...]
            vocab = dict((item[0], index) for index, item in enumerate(vocab) if item)
        if isinstance(vocab, dict):
            canonical = json.dumps(sorted(vocab.items()), ensure_ascii=False)
            entry["vocab_sha256"] = hashlib.sha256(canonical.encode("utf-8")).hexdigest()
            entry["vocab_size"] = len(vocab)
        for added in tokenizer.get("added_tokens") or []:
            if isinstance(added, dict) and isinstance(added.get("content"), str):
                entry["added"][added["content"]] = added.get("id")
    config, _ = _load(os.path.join(folder, "tokenizer_config.json"), 8 << 20)
    for name in _SPECIAL:
        token = _token_text((config or {}).get(name + "_token"))
        if token is not None:
            entry["special"][name] = token
    entry["chat_template_sha256"] = _chat_template_digest(folder, config)
    model_config, _ = _load(os.path.join(folder, "config.json"), 8 << 20)
    for name in _SPECIAL:
        value = (model_config or {}).get(name + "_token_id")
        if value is not None:
            entry["special_ids"][name] = value
    return entry


def shared_ids(draft, target):
    """How many ids two fingerprints' tokenizer produces when both ship the same one (the same
    base token -> id map and added tokens): a draft and a target of one family whose embeddings
    are padded to different sizes (Qwen2.5's 151936 and 152064) mean the same token by every id
    below it. None when they differ or either is unread."""
    draft, target = draft or {}, target or {}
    if not draft.get("vocab_sha256") or draft.get("vocab_sha256") != target.get("vocab_sha256"):
        return None
    if draft.get("added") != target.get("added") or not isinstance(draft.get("vocab_size"), int):
        return None
    ids = [i for i in (draft.get("added") or {}).values() if isinstance(i, int)]
    return max([draft["vocab_size"]] + [i + 1 for i in ids])


def fingerprints(args):
    return dict((path, fingerprint(path)) for path in args.get("paths") or [])
