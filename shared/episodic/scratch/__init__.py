"""Scratch memory of tool outcomes: short-horizon (3-14 days), tenant-scoped one-line summaries of notable
tool calls ("typecheck failed on middleware.ts — cannot find name 'UserContext'"), recalled at planning time.

A second memory kind over the same core: extraction (`extract`), a store port with SQLite and OpenSearch
Serverless adapters (`port`, `sqlite_store`, `episodic.aws.opensearch_scratch`), recall with a deadline
(`recall`), prompt packing (`pack`). Imports nothing here: the hook imports `scratch.hook_block` (stdlib only).

May import: the core and below and `mcp/`; another feature only through its `port` and `models`; its `cli`
module is a face.
"""

SCRATCH = "scratch"  # the feature's name: its part in `Memory.parts`
