"""Studies behind the evaluation's defaults, each run as `python -m episodic.evaluation.studies.<name>`:
card quality against reference cards, the eval's systems on reference cards, exchange fusion weights."""
