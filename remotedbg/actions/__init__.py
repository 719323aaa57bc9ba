"""Layer 5a: the built-in actions that commands and playbook steps share.

Each action gathers facts through the remote primitives and turns them into plain data with the
pure analyses; the CLI and the playbook runner only render or chain what they return."""
