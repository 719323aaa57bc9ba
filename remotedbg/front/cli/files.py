"""run, glob, find, grep, cat, history: the primitives as commands."""
# No `from __future__ import annotations` here: typer reads the Annotated options at runtime.

import shlex
import sys
from typing import Annotated

import typer

from remotedbg.errors import (
    ConnectionFailed,
    ExitCode,
    Interrupted,
    RemoteCommandError,
    StdoutClosed,
    UsageError,
)
from remotedbg.front.cli.context import CommandContext, fail_with, json_command, remote_command
from remotedbg.front.environment import environment, stderr_console, stdout_console
from remotedbg.front.output import one_line, printable, write_raw
from remotedbg.front.ssh_habits import local_home_hint
from remotedbg.front.writer import Document, write
from remotedbg.inventory import is_host_list
from remotedbg.local_stdin import piped_input
from remotedbg.session import transcript
from remotedbg.session.base import NO_OUTPUT_CAP


def _stream_to_terminal(name: str, chunk: bytes) -> None:
    target = sys.stdout.buffer if name == "stdout" else sys.stderr.buffer
    try:
        target.write(chunk)
        target.flush()
    except BrokenPipeError:
        if name == "stdout":
            raise StdoutClosed from None


@remote_command
def run(
    ctx: CommandContext,
    command: Annotated[list[str], typer.Argument(help="Command and arguments (after --).")],
    shell: Annotated[
        bool,
        typer.Option(
            "--shell",
            "-s",
            help="Treat the single argument as a remote shell command line "
            "(pipes, globs, $VARS). Without it every argument is passed as one quoted word.",
        ),
    ] = False,
    cwd: Annotated[str | None, typer.Option("--cwd", help="Remote working directory.")] = None,
    tty: Annotated[
        bool,
        typer.Option(
            "--tty",
            "-t",
            help="Give the command a terminal sized like yours, as ssh -t (top, htop, less, "
            "python3, nvidia-smi -l); keys go to it raw, Ctrl-C included. No --timeout.",
        ),
    ] = False,
    no_stdin: Annotated[
        bool,
        typer.Option("--no-stdin", "-n", help="Send it no input (as ssh -n): stdin is not read."),
    ] = False,
) -> int:
    """Run a command on the host; its exit status is passed through, as ssh does, and so is
    piped input (`cmd | remotedbg run ...`, `run -- bash -s < script`). Every word
    is passed quoted, except that a leading `~` or `~/` (quoted locally, as with the other
    commands) means the remote home.

    Example: remotedbg run -H gpu-box -- nvidia-smi   (with a terminal: run -t ... -- htop)"""
    if shell and len(command) != 1:
        raise UsageError("--shell takes the whole command line as ONE argument (quote it)")
    line = command[0] if shell else " ".join(_remote_word(word) for word in command)
    if is_host_list(ctx.options.host):
        if tty:
            raise UsageError("--tty runs on one host; give one --host")
        from remotedbg.fleet import parse_hosts  # a fleet's machinery, for fleets only

        hosts = parse_hosts(ctx.options.host, None, options=ctx.options)
        return _run_on_hosts(ctx, hosts, line, cwd)
    if tty:
        if environment().json:
            raise UsageError("--tty shows the program itself; it has no --json")
        return ctx.session.run_tty(line, cwd=cwd)
    given = None if no_stdin else piped_input()  # streamed as it arrives, as ssh does
    try:
        session = ctx.one_command()
        # streamed to the terminal and not held: no cap, as ssh (--json holds it all: capped)
        streamed = {} if ctx.json else {"stream": _stream_to_terminal, "capture": False,
                                         "max_output": NO_OUTPUT_CAP}  # fmt: skip
        result = session.run(line, cwd=cwd, stdin=given, **streamed)
    except Interrupted:
        raise
    except (ConnectionFailed, RemoteCommandError) as error:
        # as ssh: the remote command's status is passed through, so remotedbg's own failure
        # (connection, authentication, host key, timeout) cannot be 1-4 and is 255
        raise fail_with(error, ExitCode.RUN_FAILED) from None
    # streamed already; --json holds it all in one document
    write(Document({
        "command": line,
        "exit_status": result.exit_status,
        "stdout": result.stdout,
        "stderr": result.stderr,
        "duration_ms": round(result.duration * 1000, 2),
        "truncated": result.truncated,
    }))  # fmt: skip
    if result.truncated:
        raise RemoteCommandError("output passed the capture cap; the remote command was stopped")
    return result.exit_status if result.exit_status is not None else ExitCode.REMOTE


def _run_on_hosts(ctx: CommandContext, hosts: list[str], line: str, cwd: str | None) -> int:
    """Output grouped by host, in the order given; the exit status is the highest of them
    (a host that cannot be reached counts as 3)."""
    from remotedbg.fleet import run_on_hosts

    runs = run_on_hosts(hosts, ctx.options, line, cwd)

    def shown() -> None:
        for run in runs:
            outcome = run.error or f"exit {run.exit_code}"
            stdout_console().print(f"── {printable(run.host)}: {outcome}", markup=False)
            sys.stdout.flush()
            sys.stdout.buffer.write(run.stdout)
            sys.stdout.buffer.flush()
            sys.stderr.buffer.write(run.stderr)
            sys.stderr.buffer.flush()

    hosts_run = [
        {
            "host": run.host,
            "exit_status": run.exit_code,
            "stdout": run.stdout.decode("utf-8", "replace"),
            "stderr": run.stderr.decode("utf-8", "replace"),
            "error": run.error,
        }
        for run in runs
    ]
    write(Document({"command": line, "hosts": hosts_run}, shown))
    return max(run.exit_code for run in runs)


def _remote_word(word: str) -> str:
    """One argv word for the remote shell: quoted, with a leading ~ left to expand there."""
    if word == "~":
        return '"$HOME"'
    if word.startswith("~/"):
        return '"$HOME"/' + shlex.quote(word[2:]) if word[2:] else '"$HOME"/'
    return shlex.quote(word)


def say_missing(line: str, path: str) -> None:
    """`line` (no match for PATH, no such directory) on stderr, and below it the hint when the
    path is under the local home: an unquoted `~` the local shell expanded."""
    stderr_console().print(line, markup=False)
    hint = local_home_hint(path)
    if hint:
        stderr_console().print(f"  {printable(hint)}", markup=False)


def _print_suggestions(pattern: str, suggestions: dict | None) -> None:
    say_missing(f"no match for {printable(pattern)}", pattern)
    if not suggestions:
        return
    where = printable(suggestions.get("searched_from", ""))
    groups = [
        (
            f"names containing {suggestions.get('stem')!r} below {where}:",
            suggestions.get("containing_stem", []),
        ),
        (f"similar names in {where}:", suggestions.get("nearby", [])),
    ]
    for heading, names in groups:
        if names:
            stderr_console().print(f"  {heading}", markup=False)
            for name in names[:10]:
                stderr_console().print(f"    {printable(name)}", markup=False)


def _incomplete(message: str) -> None:
    """A bound was reached: the results are incomplete (exit 1). Said even under -q, as every
    reason for a nonzero exit is."""
    stderr_console().print(f"remotedbg: {printable(message)}", markup=False, highlight=False)


def _walk_bound(reason: str) -> str:
    """The line for a `**` walk that stopped: its match bound is --limit's; its directory and
    time bounds are not liftable, the pattern is to be narrowed."""
    lift = "--limit N lifts it" if "matches" in reason else "narrow the pattern"
    return f"{reason}; {lift}"


@remote_command
def glob(
    ctx: CommandContext,
    patterns: Annotated[list[str], typer.Argument(help="Patterns, expanded on the remote side.")],
    limit: Annotated[
        int, typer.Option("--limit", min=1, metavar="N", help="Print at most N matches a pattern.")
    ] = 10000,
) -> int:
    """Expand globs on the host (`~`, `*`, `?`, `[..]`, `**`); suggest names when none match.
    A name that exists as typed is that name; a backslash makes the next character plain.

    Example: remotedbg glob -H gpu-box '~/sglang/python/sglang/srt/models/*eagle*.py'"""
    results = ctx.remote.glob(patterns, limit)
    for entry in results:  # --limit holds whatever the box answers
        if len(entry["matches"]) > limit:
            entry["count"] = max(int(entry.get("count") or 0), len(entry["matches"]))
            entry["matches"], entry["truncated"] = entry["matches"][:limit], True
    truncated = any(entry.get("truncated") for entry in results)

    def shown() -> None:
        for entry in results:
            for match in entry["matches"]:
                write_raw(one_line(match) + "\n")
            if not entry["matches"]:
                _print_suggestions(entry["pattern"], entry.get("suggestions"))

    write(Document({"results": results, "truncated": truncated}, shown))
    for entry in results:
        if entry.get("stopped"):
            _incomplete(_walk_bound(entry["stopped"]))
        elif entry.get("truncated"):
            _incomplete(
                f"{entry['pattern']}: {len(entry['matches']):,} of {entry['count']:,} matches"
                " printed; --limit N prints more"
            )
    missing = any(not e["matches"] for e in results)
    return ExitCode.FINDINGS if missing or truncated else ExitCode.OK


@remote_command
def find(
    ctx: CommandContext,
    root: Annotated[str, typer.Argument(help="Directory (or glob) to search.")],
    name: Annotated[
        list[str] | None, typer.Option("--name", "-n", help="Name pattern (fnmatch, repeatable).")
    ] = None,
    type: Annotated[
        str | None, typer.Option("--type", "-t", help="f (file), d (directory) or l (symlink).")
    ] = None,
    max_depth: Annotated[
        int | None, typer.Option("--max-depth", min=0, help="Descend at most N levels below ROOT.")
    ] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, help="Stop after N matches.")] = 10000,
) -> int:
    """Find files by name below a directory (__pycache__, .git and the like are pruned).
    GNU find's spellings work too: -name, -type, -maxdepth.

    Example: remotedbg find -H gpu-box '~/sglang' -name '*eagle*' -type f"""
    if type not in (None, "f", "d", "l"):
        raise UsageError("--type must be f, d or l")
    found = ctx.remote.find(root, name, type, max_depth, limit)
    if len(found["results"]) > limit:  # --limit holds whatever the box answers
        found["results"], found["truncated"] = found["results"][:limit], True
        found["stopped"] = list(dict.fromkeys([*(found.get("stopped") or []), "limit"]))

    def shown() -> None:
        if not found["roots"]:
            say_missing(f"no such directory: {printable(root)}", root)
        for entry in found["results"]:
            write_raw(one_line(entry["path"]) + "\n")

    write(Document(found, shown))
    for why in found.get("stopped", []):
        if why == "limit":
            _incomplete(f"find stopped at {limit:,} matches; --limit N lifts it")
        else:
            _incomplete(_walk_bound(why))
    if found["truncated"] or not found["results"]:
        return ExitCode.FINDINGS
    return ExitCode.OK


@remote_command
def grep(
    ctx: CommandContext,
    pattern: Annotated[str, typer.Argument(help="Extended regular expression (grep -E).")],
    paths: Annotated[list[str], typer.Argument(help="Files, directories or globs.")],
    context: Annotated[
        int, typer.Option("--context", "-C", min=0, help="Lines of context around a match.")
    ] = 0,
    ignore_case: Annotated[
        bool, typer.Option("--ignore-case", "-i", help="Ignore case, as grep -i.")
    ] = False,
    fixed: Annotated[
        bool, typer.Option("--fixed-strings", "-F", help="PATTERN is a string, not a regex.")
    ] = False,
    word: Annotated[
        bool, typer.Option("--word-regexp", "-w", help="Match whole words only, as grep -w.")
    ] = False,
    files_only: Annotated[
        bool,
        typer.Option("--files-with-matches", "-l", help="Print only the names of matching files."),
    ] = False,
    include: Annotated[
        list[str] | None,
        typer.Option("--include", metavar="GLOB", help="Search only files whose name matches."),
    ] = None,
    exclude: Annotated[
        list[str] | None,
        typer.Option("--exclude", metavar="GLOB", help="Skip files whose name matches."),
    ] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, help="Stop after N matches.")] = 5000,
) -> int:
    """Search files on the host with the remote's grep -E; binary files are skipped. As in grep,
    -i ignores case (the key file is --identity here), -w matches words, -l lists files,
    --include/--exclude filter file names; directories are searched and lines numbered
    always (grep -rn: -r, -R, -n and -E are accepted and change nothing).

    Example: remotedbg grep -H gpu-box -w -C 2 hot_token_id '~/sglang/python/sglang/srt/models'"""
    found = ctx.remote.grep(
        pattern, paths, context, ignore_case, fixed, limit, word=word,
        include=include, exclude=exclude,
    )  # fmt: skip
    write(Document(found, lambda: _print_matches(found, files_only, context)))
    for why in found.get("stopped", []):
        if why == "limit":
            _incomplete(f"grep stopped at {limit:,} matches; --limit N lifts it")
        else:
            _incomplete(_walk_bound(why))
    if found["truncated"] or not found["records"]:
        return ExitCode.FINDINGS
    return ExitCode.OK


def _print_matches(found: dict, files_only: bool, context: int) -> None:
    """grep's records as grep -rn prints them (-l: the names of the files)."""
    for missing in found["unmatched"]:
        _print_suggestions(missing["pattern"], missing["suggestions"])
    if files_only:
        for path in dict.fromkeys(record["path"] for record in found["records"]):
            write_raw(f"{path}\n")
        return
    previous: tuple[str, int] | None = None  # the path and last line printed
    for record in found["records"]:
        first = record["before"][0]["line"] if record["before"] else record["line"]
        if context and previous and (previous[0] != record["path"] or first > previous[1] + 1):
            write_raw("--\n")  # between groups of context, as grep prints it
        last = record["after"][-1]["line"] if record["after"] else record["line"]
        previous = (record["path"], last)
        for line in record["before"]:
            write_raw(f"{record['path']}-{line['line']}-{line['text']}\n")
        write_raw(f"{record['path']}:{record['line']}:{record['text']}\n")
        for line in record["after"]:
            write_raw(f"{record['path']}-{line['line']}-{line['text']}\n")


@remote_command
def cat(
    ctx: CommandContext,
    paths: Annotated[list[str], typer.Argument(help="Files or globs.", metavar="PATH")],
    max_bytes: Annotated[
        int, typer.Option("--max-bytes", min=1, metavar="N", help="Read at most N bytes a file.")
    ] = 1 << 20,
    tail: Annotated[
        int | None,
        typer.Option("--tail", min=0, metavar="N", help="The last N lines only, as tail -n."),
    ] = None,
    number: Annotated[
        bool, typer.Option("--number", "-n", help="Number the lines, as cat -n.")
    ] = False,
    binary: Annotated[
        bool, typer.Option("--binary", help="Print a binary file's bytes too.")
    ] = False,
) -> int:
    """Print files from the host: the first --max-bytes of each, or its last --tail lines.
    Several files each get a `==> PATH <==` header, as head and tail print. A binary file
    (a NUL byte in its first 8 KiB) is named, not printed, unless --binary. A file cut at
    --max-bytes is said on stderr and exits 1.

    Example: remotedbg cat -H gpu-box --tail 50 '~/logs/server.log'"""
    files = ctx.remote.read_text(paths, max_bytes, tail=tail, binary=binary)
    capped = [entry for entry in files if entry.get("capped")]
    stopped = [entry for entry in files if "stopped" in entry]
    missing = any("error" in entry for entry in files if entry not in stopped)

    def shown() -> None:
        headers = len(files) > 1
        printed = 0
        for entry in files:
            if entry in stopped:
                continue
            if "error" in entry:
                _say_unread(entry)
            elif entry.get("binary"):
                stderr_console().print(
                    f"{printable(entry['path'])}: binary file ({entry['size']} bytes), not "
                    "printed; --binary prints it",
                    markup=False,
                )
            else:
                if headers:
                    write_raw(("\n" if printed else "") + f"==> {entry['path']} <==\n")
                write_raw(number_lines(entry["text"]) if number else entry["text"])
                printed += 1

    write(Document({"files": files, "truncated": bool(capped) or bool(stopped)}, shown))
    for entry in stopped:
        _incomplete(_walk_bound(entry["error"]))
    for entry in capped:
        if tail is None:
            _incomplete(
                f"{entry['path']}: first {max_bytes:,} of {entry['size']:,} bytes;"
                " --max-bytes N reads more"
            )
        else:
            shown = entry["text"].count("\n")
            _incomplete(
                f"{entry['path']}: {shown:,} of the last {tail:,} lines fit in --max-bytes"
                f" {max_bytes:,}; --max-bytes N reads further back"
            )
    if missing or capped or stopped:
        return ExitCode.FINDINGS
    return ExitCode.OK


def _say_unread(entry: dict) -> None:
    """Why a file `cat` was given was not read, on stderr."""
    if entry.get("suggestions"):
        _print_suggestions(entry["pattern"], entry["suggestions"])
        return
    path = entry.get("path", entry["pattern"])
    line = f"{printable(path)}: {entry['error']}"
    if str(entry["error"]).lower().startswith("no such"):
        say_missing(line, path)
    else:  # there, but unreadable: no `~` to blame
        stderr_console().print(line, markup=False)


def number_lines(text: str) -> str:
    """Lines numbered as GNU `cat -n` numbers them: six columns, right aligned, a tab."""
    lines = text.split("\n")
    last = lines.pop() if lines else ""  # after the final newline (or an unended last line)
    body = "".join(f"{index:6d}\t{line}\n" for index, line in enumerate(lines, 1))
    return body + (f"{len(lines) + 1:6d}\t{last}" if last else "")


def parse_since(text: str, now: float) -> float:
    """A --since value as a timestamp: '30m', '2h', '1d', '90s', or an ISO date/time."""
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    if text and text[-1] in units and text[:-1].replace(".", "", 1).isdigit():
        return now - float(text[:-1]) * units[text[-1]]
    from datetime import datetime

    try:
        return datetime.fromisoformat(text).timestamp()
    except ValueError:
        message = f"--since {text!r}: expected 30m, 2h, 1d or a date like 2026-11-29T14:00"
        raise UsageError(message) from None


@json_command
def history(
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, help="Show the last N.")] = 20,
    host: Annotated[
        str | None, typer.Option("--host", "-H", help="Only what went to this host.")
    ] = None,
    since: Annotated[
        str | None, typer.Option("--since", help="Only newer entries: 30m, 2h, 1d or a date.")
    ] = None,
    verbose: Annotated[
        bool,
        typer.Option("--verbose", "-v", help="Also the remote calls each command made."),
    ] = False,
) -> int:
    """Show the command lines you ran, newest last (secrets redacted); -v adds the remote
    calls each one made. The transcript is private to your user.

    Example: remotedbg history -H gpu-box --since 2h -v"""
    import time

    cutoff = parse_since(since, time.time()) if since else None
    typed = environment().typed_option("--host", "-H")
    only = host if typed else None  # not a default host's filter
    entries = list(transcript.recent(limit, calls=verbose, host=only, since=cutoff))

    def shown() -> None:
        for entry in entries:
            # one line each, the command last and whole: copy-pasteable, never cut
            stamp = time.strftime("%m-%d %H:%M:%S", time.localtime(entry.get("ts", 0)))
            status = "timeout" if entry.get("timed_out") else str(entry.get("exit_status"))
            command = printable(entry.get("command", ""))
            typed = entry.get("kind") == "typed"
            stdout_console().print(
                f"{stamp}  {printable(entry.get('target', '')):<16} {status:>7} "
                f"{entry.get('duration_ms', 0):>9.1f} ms  "
                + (command if typed else f"  ↳ {command}"),
                markup=False,
                highlight=False,
                style=None if typed else "dim",
            )

    write(Document({"transcript": str(transcript.transcript_path()), "entries": entries}, shown))
    return ExitCode.OK
