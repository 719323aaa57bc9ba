"""Persistent sessions, as OpenSSH's ControlPersist: the first command to a host leaves a small
background process (`daemon`) holding the connection and its remote executor; later commands
hand it their command line over a Unix socket (`client`, which imports almost nothing) and get
the output back. `protocol` is what both sides share: frames, where sockets live, which
socket serves a command line."""
