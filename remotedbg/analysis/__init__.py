"""Pure, local analyses of what the remote agents collected (no I/O)."""
