"""Tiny facts about the remote interpreter."""

import os
import sys


def describe(args):
    info = {
        "python": sys.executable,
        "version": list(sys.version_info[:3]),
        "home": os.path.expanduser("~"),
    }
    for name in ("numpy", "torch"):
        try:
            __import__(name)
            info[name] = True
        except Exception:
            info[name] = False
    return info


def interpreters(args):
    """Pythons under the given prefix globs and which of `modules` their site-packages hold
    (looked up on disk: no interpreter is started)."""
    import glob

    found = []
    seen = set()
    for pattern in args.get("prefixes", []):
        for prefix in sorted(glob.glob(os.path.expanduser(pattern))):
            python = os.path.join(prefix, "bin", "python3")
            if not os.access(python, os.X_OK):
                continue
            real = os.path.realpath(python)
            if (prefix, real) in seen:
                continue
            seen.add((prefix, real))
            site = glob.glob(os.path.join(prefix, "lib", "python3*", "site-packages"))
            modules = {
                name: any(os.path.isdir(os.path.join(s, name)) for s in site)
                for name in args.get("modules", [])
            }
            found.append({"python": python, "prefix": prefix, "modules": modules})
    return found
