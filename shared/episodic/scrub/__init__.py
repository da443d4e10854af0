"""Secret scrubbing (invariant 4: secrets never leave): every secret becomes `[REDACTED:<kind>]`.

The face of the package: `Scrubber` (the one pass, `scrubber`), `default_scrubber()`, the kinds it names and
their placeholder. The rules are data beside it (`rules`, `catalogue`, `positions`, `companions`, `values`).

May import: `kernel/` only.
"""

from __future__ import annotations

from episodic.scrub.scrubber import KINDS, Scrubber, default_scrubber, placeholder

__all__ = ["KINDS", "Scrubber", "default_scrubber", "placeholder"]
