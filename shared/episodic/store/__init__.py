"""Stores: cards and their per-rendering vectors, tenant-scoped, parity-checked.

`episodic.store.sqlite.SQLiteStore` is the embedded index; `parity` and `hybrid` hold the rules every
store shares (the parity error message, the safe keyword query, fusion and the threshold rule).

May import: `kernel/`, `plumbing/`, `scrub/`, `parse/`, `embed/`.
"""
