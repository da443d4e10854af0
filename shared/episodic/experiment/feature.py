"""The experiment feature's declared interface: `episodic experiment report` over its settings section.

The smallest feature, and the one to copy: a name, a settings prefix and commands. (Its outcome measures
are taken as the scoped source reads a session: `episodic.assembly.build_scoped_source`.)"""

from __future__ import annotations

from episodic.kernel.feature_contract import Feature

FEATURE = Feature(
    name="experiment",
    settings_prefix="experiment_",
    cli="episodic.experiment.cli:register",
    commands=("experiment",),
)
