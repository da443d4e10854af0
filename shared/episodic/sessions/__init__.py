"""Which sessions exist and what is kept of them: scope rules and their source, trajectories
kept beyond the agent's cleanup, the agent's cleanup setting, id prefixes, the demo corpus, a corpus's
survey and the backfill estimate with its prices.

May import: `kernel/`, `plumbing/`, `scrub/`, `parse/`, `embed/`, `distill/`, `store/`."""
