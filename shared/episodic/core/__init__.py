"""The core's two paths over the ports: ingest (sessions to stored cards, and the selection of
`index --upgrade`) and search (a query to ranked hits and their confidence tiers).

May import: everything below it: `kernel/`, `plumbing/`, `scrub/`, `parse/`, `embed/`, `distill/`,
`store/`, `sessions/`, `cards/`; never a feature, `mcp/`, the assembly, `aws/` or a face."""
