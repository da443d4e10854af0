"""The agent hooks, faces run as short processes of their own: the prompt hook (payload, server,
packing, the fail-open wrapper), the failure hook and its payloads, the session-end distil, the local
server they start, the hook's token.

May import: anything (a face); the prompt and failure hooks import only the standard library and
`plumbing/` before their network call (tests/unit/hooks/test_hook.py)."""
