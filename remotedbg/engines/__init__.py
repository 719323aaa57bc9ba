"""What remotedbg knows about serving engines (SGLang, vLLM): data only, no I/O.

`knowledge.KNOWLEDGE` is a JSON-ready dict passed to the remote agent `engine_scan`, so the agent
carries no copy of it and stays a pure mechanism.
"""
