"""Layer 3 (knowledge): checkpoint formats on the local side."""
