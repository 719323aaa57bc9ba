"""remotedbg: remote debugging over SSH for speculative-decoding deployments."""

__version__ = "0.1.0"
