"""The front ends: the command line (`cli/`), the REPL, rich and Markdown rendering (`report.py`,
`output.py`) and the demo box. Empty on purpose: a command line imports only its command's
module."""
