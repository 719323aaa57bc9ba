"""Layer 2: remote primitives built on Session.run, every argument quoted."""
