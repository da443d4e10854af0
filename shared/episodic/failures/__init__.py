"""Failure memory: errors a session met and got past, recalled when a command fails again.

May import: the core and below and `mcp/`; another feature only through its `port` and `models`; its `cli`
module is a face.
"""

FAILURES = "failures"  # the feature's name: its part in `Memory.parts`
