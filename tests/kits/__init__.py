"""Helpers the tests share (servers, fakes' drivers, builders): imported as `kits.<name>`; no tests here."""
