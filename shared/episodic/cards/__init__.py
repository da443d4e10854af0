"""Everything about a card once distilled: writing it (the shared steps, agent-written cards), its
files, checks, import and export, human review and its rules, its opening words, and how it is
presented to an agent.

May import: `kernel/`, `plumbing/`, `scrub/`, `parse/`, `embed/`, `distill/`, `store/`, `sessions/`."""
