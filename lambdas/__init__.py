"""Thin Lambda handlers over the `episodic` core: parse the event, call one core function, shape the answer."""
