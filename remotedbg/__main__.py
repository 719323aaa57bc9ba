"""`remotedbg` and `python -m remotedbg`: a command line a persistent-session daemon can serve
goes to it before anything heavy is imported; otherwise the CLI runs it here."""

import sys


def main() -> None:
    from remotedbg.persist import client

    code = client.run(sys.argv[1:])
    if code is not None:
        raise SystemExit(code)
    from remotedbg.cli import main as run_here

    run_here()


if __name__ == "__main__":
    main()
