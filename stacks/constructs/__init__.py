"""One construct per concern: storage, ingest, serving, monitoring (plus the shared Lambda builder)."""
