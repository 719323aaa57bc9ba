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
