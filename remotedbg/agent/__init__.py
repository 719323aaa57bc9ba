"""Code that runs ON the remote machine, shipped over stdin to its own Python.

Rules for every module here: standard library only (numpy or torch imported lazily, used when the
remote has them), Python 3.8 syntax, no imports from outside `remotedbg.agent`. The modules are
importable locally too, so the functions that run remotely are unit-tested here.
"""
