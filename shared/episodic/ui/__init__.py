"""`episodic ui`: a local web viewer of the memory with human review (browse, one episode, the review
queue, eval and dream pages), served on loopback behind a per-run secret (see `security`).

May import: anything (a face).
"""
