"""In-process fakes behind ports, enforcing the real services' documented limits (tests only)."""
