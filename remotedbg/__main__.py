"""`remotedbg` and `python -m remotedbg`: a command line a persistent-session daemon can serve
goes to it before anything heavy is imported; otherwise the CLI runs it here."""

import os
import sys


def main() -> None:
    try:
        code = _run(sys.argv[1:])
    except KeyboardInterrupt:  # before the command's own handling: the daemon's start, imports
        try:
            sys.stderr.write("remotedbg: interrupted\n")
        except (OSError, ValueError):
            pass
        code = 130
    _leave(code)


def _run(words: list[str]) -> int:
    from remotedbg.front.ssh_habits import options_after_command
    from remotedbg.persist import client
    from remotedbg.persist.protocol import ROOT_FLAGS

    # `-H box run ...`, as ssh users type it: the client finds the host where the daemon would
    code = client.run(options_after_command(words, ROOT_FLAGS))
    if code is None:
        from remotedbg import local_gc
        from remotedbg.local_signals import Terminated, unwind_on_termination

        local_gc.tune()

        unwind_on_termination()
        from remotedbg.front.cli import run_words

        try:
            code = run_words(words)
        except KeyboardInterrupt:
            code = 130
        except Terminated as stop:
            code = stop.exit_code
            try:
                sys.stderr.write(f"remotedbg: terminated ({stop})\n")
            except (OSError, ValueError):
                pass  # SIGHUP: the terminal is gone
    return code


def _leave(code: int) -> None:
    """Exit without tearing the interpreter down module by module (~40 ms with paramiko, rich
    and typer loaded): every file and session is closed by then; only stdio is flushed."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass  # a closed pipe (`| head`): nothing more can reach it
    os._exit(code)


if __name__ == "__main__":
    main()
