"""Injection records: each card or pointer memory gave a session (prompt hook, failure hook), what that session
did with it (read from its own transcript when it is indexed: `uses`), the summary shown in `stats`, `doctor`
and the viewer (`summary`), and the steering rules' evidence (`episodic.core.injected` applies them).

May import: the core and below and `mcp/`; another feature only through its `port` and `models`; its `cli`
module is a face.
"""

from episodic.kernel.injection_port import INJECTIONS

__all__ = ["INJECTIONS"]
