"""The kernel: the card's models, the ports, settings, errors, tokens and the memory's contract.

May import: `plumbing/`, and `mcp.registry` for the tools a feature declares (the one upward import,
listed in tests/unit/package/test_import_graph.py)."""
