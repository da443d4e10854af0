"""Reusable contract suites: base classes that each adapter's test module subclasses."""
