"""Failure memory: errors a session met and got past, recalled when a command fails again (issue 42)."""
