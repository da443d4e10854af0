"""episodic's CLI with the full-card gate read from a JSON file, to read a candidate gate on every yardstick.

    python scripts/studies/with_gate.py --gate /tmp/full_card_gate.pseudo.json eval yardsticks …

The file has the package's format (shared/episodic/data/full_card_gate.json). Its path goes through the
environment so that spawned worker processes, which re-import this module as __mp_main__, put the same gate in
place; the CLI itself runs only in the parent.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import episodic.core.full_card_gate as full_card_gate

GATE_FILE = "EPISODIC_STUDY_GATE_FILE"

if sys.argv[1:2] == ["--gate"]:
    os.environ[GATE_FILE] = sys.argv[2]
    del sys.argv[1:3]
if os.environ.get(GATE_FILE):
    _gates = full_card_gate.read_gates(Path(os.environ[GATE_FILE]).read_text(encoding="utf-8"))
    full_card_gate.shipped_gates = lambda: _gates  # type: ignore[assignment]

if __name__ == "__main__":
    from episodic.cli import main

    main()
