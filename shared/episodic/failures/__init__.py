"""Failure memory: errors a session met and got past, recalled when a command fails again (issue 42)."""

FAILURES = "failures"  # the feature's name: its part in `Memory.parts`
