"""The experiment's one core call for the faces: measure what is missing, then build the report."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from episodic.experiment import holdout, measures
from episodic.experiment.report import build_report
from episodic.kernel.injection_port import InjectionStore
from episodic.kernel.ports import TranscriptSource
from episodic.kernel.settings import Settings

# the transcripts the outcome measures are taken from (the assembly's scoped source, recording measures)
MeasuringSource = Callable[[], TranscriptSource]


def measure_missing(
    measuring_source: MeasuringSource, missing: set[str], paths: Sequence[str] | None = None
) -> int:
    """Measure logged sessions that have no measures yet from their transcripts on this machine (the AWS
    deployment indexes in the cloud: its sessions are measured here, where the transcripts are)."""
    if not missing:
        return 0
    source = measuring_source()
    for found in source.discover(list(paths) if paths else None):
        if found.session_key in missing:
            source.load(found)  # the recorder measures it; a session out of scope stays unmeasured
    recorder = getattr(source, "recorder", None)
    return int(getattr(recorder, "recorded", 0))


def experiment_report(
    settings: Settings,
    measuring_source: MeasuringSource,
    since: datetime | None = None,
    paths: Sequence[str] | None = None,
    injections: InjectionStore | None = None,
) -> dict[str, Any]:
    log = list(holdout.read_log(settings.home))
    known = measures.load_all(settings.home)
    missing = {str(entry["session_id"]) for entry in log} - set(known)
    newly = measure_missing(measuring_source, missing, paths)
    if newly:
        known = measures.load_all(settings.home)
    share = settings.experiment_holdout if settings.experiment_enabled else None
    report = build_report(log, known, since=since, configured_holdout=share)
    report["sessions"]["measured_now"] = newly
    if injections is not None:  # what each session was given and did with it (episodic.injections)
        from episodic.experiment.given import given_section
        from episodic.experiment.report import arms_of

        arms = arms_of(log, since)
        records = {sid: injections.of_session(settings.tenant, sid) for sid in arms}
        report["given"] = given_section(arms, records, known)
    return report
