"""Stdlib-only plumbing the hook processes import before any third-party code: bounded reads,
SQLite connections, the private home, the index lock, loopback HTTP clients, where settings and the home
come from, the distiller's marker, the local server's autostart, the cores this process may use.

May import: the standard library and `episodic` itself (its version) only."""
