"""One search for every trigger literal of the scrubber (one automaton per group was several times slower).

The literals come in groups (the rules', the companions', the position rules', the catalogue's, any-case). A search
reports every occurrence of every literal; `leftmost_first` then keeps, per group, what a leftmost-first automaton over
that group alone would report (`sk-` inside `sk-ant-` is no second trigger), so every engine gives the same hits:

- Hyperscan (the `hyperscan` wheel, Vectorscan inside): ONE scan of the text's UTF-8 for every literal, any-case
  ones with `HS_FLAG_CASELESS` (the fastest: docs/security.md);
- `ahocorasick_rs` automata of at most 64 literals (its SIMD prefilter's limit), any-case groups in the lower-cased
  text: where Hyperscan has no wheel (Linux on ARM);
- `str.find` per literal, in pure Python: where neither is installed, or the text cannot be UTF-8 (lone surrogates).
Hyperscan's compiled databases are cached per install and checked before use (`hs_cache`).
"""

from __future__ import annotations

import importlib
import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import episodic.scrub.hs_cache as hs_cache
from episodic.scrub.finder import LiteralFinder, find_each

_hs: Any
try:  # optional accelerator; results are the same without it
    _hs = importlib.import_module("hyperscan")
except ImportError:  # pragma: no cover - exercised by the engine tests through `engine="ahocorasick"`
    _hs = None

Hit = tuple[int, int, int]  # literal index (over all groups), start, end
AUTOMATON_MAX_LITERALS = 64  # ahocorasick_rs's SIMD prefilter (Teddy) takes at most 64 literals
# literals shorter than this (`SK`, `Q~`, `r8_`) get an automaton of their own in the ahocorasick engine: among 60
# longer ones they made Teddy verify so many candidates that its scan of the shared transcripts took 10x longer
SHORT_LITERAL_CHARS = 4


@dataclass(frozen=True)
class Group:
    literals: tuple[str, ...]
    any_case: bool = False  # matched ignoring ASCII case (its literals are lower case)
    long_only: bool = False  # searched only in texts of `long_from` characters or more
    # literal -> a regex that must follow it for the hit to count (its rules need it: a cheap gate before them)
    contexts: Mapping[str, str] = field(default_factory=dict)
    # literal -> the characters that may not follow it (`pass` in `password`, `Token` in `Tokens`): such a hit is
    # no hit, before leftmost-first choice (in the Hyperscan pattern itself: 19,275 of 57,455 hits over the shared
    # transcripts' raw text never reach Python)
    rejects: Mapping[str, frozenset[str]] = field(default_factory=dict)


def hyperscan_available() -> bool:
    return _hs is not None


class TriggerSearch:
    """Every literal of every group in a text, as leftmost-first hits per group sorted by (start, index): `scan`
    gives them as (start, index, end), which sorts as it should with no key, `find` as (index, start, end)."""

    def __init__(
        self,
        groups: Sequence[Group],
        long_from: int,
        engine: str = "auto",
        runs: Sequence[str] = (),
        runs_below: int = 0,
    ) -> None:
        """`runs`: regexes searched by Hyperscan alone in long texts shorter than `runs_below` characters (`scan`
        reports where they matched; for other texts and engines it reports None and the caller looks its own way).
        The runs slow the scan: in a short text they ride along in the one scan, a longer one is better walked
        (see `companions`; the figures in docs/security.md)."""
        self.groups = tuple(groups)
        self.long_from = long_from
        self.runs = tuple(runs)
        self.runs_below = runs_below
        self.literals: list[str] = []
        self.group_of: list[int] = []
        self.offsets: list[int] = []
        for number, group in enumerate(self.groups):
            self.offsets.append(len(self.literals))
            self.literals += group.literals
            self.group_of += [number] * len(group.literals)
        self.lengths = [len(literal.encode()) for literal in self.literals]
        self.contexts: dict[int, re.Pattern[str]] = {}
        for index, literal in enumerate(self.literals):
            group = self.groups[self.group_of[index]]
            if literal in group.contexts:
                flags = re.IGNORECASE if group.any_case else 0
                self.contexts[index] = re.compile(group.contexts[literal], flags | re.ASCII)
        self.char_lengths = [len(literal) for literal in self.literals]
        self.rejects: dict[int, frozenset[str]] = {}
        for index, literal in enumerate(self.literals):
            rejected = self.groups[self.group_of[index]].rejects.get(literal)
            if rejected:
                self.rejects[index] = rejected
        # hits Hyperscan reports by their start: those matched with what follows them
        self._by_start = frozenset(self.contexts) | frozenset(self.rejects)
        if engine == "auto":
            engine = "hyperscan" if _hs is not None else "ahocorasick"
        self.engine = engine
        self._databases: tuple[Any, Any, Any] | None = None
        self.probed: list[tuple[int, int]] = []
        if engine == "hyperscan":
            long_db = self._hyperscan(long=True, runs=False)
            with_runs = (
                self._hyperscan(long=True, runs=True) if self.runs and runs_below > long_from else None
            )
            # by `which` (see `scan`): short texts, long ones with the runs (None: none), longer ones
            self._databases = (self._hyperscan(long=False, runs=False), with_runs, long_db)
            self._local = threading.local()  # a Hyperscan scratch serves one scan at a time: one per thread
        else:
            finders = self._finders(force_fallback=engine != "ahocorasick")
            self.engine = "ahocorasick" if finders and finders[0][0].accelerated else "python"
            scans = [(finder.utf8_scanner(), indexes, any_case) for finder, indexes, any_case in finders]
            self._scans_long = scans
            self._scans_short = [
                scan for scan in scans if not self.groups[self.group_of[scan[1][0]]].long_only
            ]

    # ------------------------------------------------------------------ building

    def _hyperscan(self, *, long: bool, runs: bool) -> Any:
        expressions: list[bytes] = []
        ids: list[int] = []
        flags: list[int] = []
        probes: list[hs_cache.Probe] = []  # a text each pattern must match: the cache's known answers
        for index, literal in enumerate(self.literals):
            group = self.groups[self.group_of[index]]
            if group.long_only and not long:
                continue
            context = group.contexts.get(literal)
            pattern = _pattern(literal, group.any_case)
            if context is not None:  # the context inside the pattern; where the hit starts is then asked for
                pattern += b"(?i)" + context.encode() if group.any_case else context.encode()
            if index in self.rejects:  # any other character, or the text's end
                pattern += (
                    b"(?:[^" + b"".join(b"\\x%02x" % ord(c) for c in sorted(self.rejects[index])) + b"]|\\z)"
                )
            expressions.append(pattern)
            ids.append(index)
            flags.append(_hs.HS_FLAG_SOM_LEFTMOST if index in self._by_start else 0)
            probe = self._probe(index)
            if probe is not None:
                probes.append((index, probe))
        for number, run in enumerate(self.runs if runs else ()):
            expressions.append(run.encode())
            ids.append(len(self.literals) + number)
            flags.append(_hs.HS_FLAG_SOM_LEFTMOST)
            run_sample = hs_cache.sample(run.replace("\\z", "\\Z"))
            if run_sample is not None:
                probes.append((ids[-1], run_sample.encode()))
        self.probed.append((len(probes), len(expressions)))  # (with a known answer, patterns), per database
        return hs_cache.compiled(_hs, expressions, ids, flags, probes)

    def _probe(self, index: int) -> bytes | None:
        """A text literal `index`'s Hyperscan pattern matches: the literal, a sample of its context, then a
        character its rejects allow."""
        literal = self.literals[index]
        group = self.groups[self.group_of[index]]
        context = group.contexts.get(literal, "")
        flags = re.ASCII | (re.IGNORECASE if group.any_case else 0)
        text = hs_cache.sample(re.escape(literal) + f"(?:{context})", flags) if context else literal
        rejected = self.rejects.get(index, frozenset())
        tail = next((c for c in "\n #~" if c not in rejected), None)
        return None if text is None or tail is None else (text + tail).encode()

    def _finders(self, *, force_fallback: bool) -> list[tuple[LiteralFinder, list[int], bool]]:
        """(finder, the index of each of its literals, any case) per chunk of at most 64 literals of a group."""
        finders = []
        for number, group in enumerate(self.groups):
            offset = self.offsets[number]
            indexed = sorted(enumerate(group.literals), key=lambda row: len(row[1]) < SHORT_LITERAL_CHARS)
            chunks: list[list[tuple[int, str]]] = []
            for short in (False, True):
                rows = [row for row in indexed if (len(row[1]) < SHORT_LITERAL_CHARS) == short]
                chunks += [
                    rows[at : at + AUTOMATON_MAX_LITERALS]
                    for at in range(0, len(rows), AUTOMATON_MAX_LITERALS)
                ]
            for chunk in chunks:
                finder = LiteralFinder(
                    [lit for _, lit in chunk], force_fallback=force_fallback, overlapping=True
                )
                finders.append((finder, [offset + i for i, _ in chunk], group.any_case))
        return finders

    # ------------------------------------------------------------------ searching

    def find(self, text: str, data: bytes | None) -> list[Hit]:
        """The hits in `text` as (literal index, start, end), `data` its UTF-8 or ASCII form (see `scan`)."""
        return [(index, start, end) for start, index, end in self.scan(text, data)[0]]

    def scan(self, text: str, data: bytes | None) -> tuple[list[Hit], list[int] | None]:
        """The hits in `text` as (start, literal index, end), and the sorted offsets where `runs` matched (None:
        this engine does not look).

        `data` is the text's UTF-8, or its ASCII form (`text.encode("ascii", "replace")`: one byte a character, so
        no offset needs mapping), or None (the slow path over the text itself)."""
        long = len(text) >= self.long_from
        runs: list[int] | None = None
        if data is None:
            found = self._find_str(text, long)
        elif self._databases is not None:  # Hyperscan, inline: this runs for every text the scrubber sees
            which = 0 if not long else 1 if len(text) < self.runs_below and self._databases[1] else 2
            try:
                scratch = self._local.scratches[which]
            except AttributeError:
                self._local.scratches = tuple(_hs.Scratch(db) if db else None for db in self._databases)
                scratch = self._local.scratches[which]
            ends: list[tuple[int, int, int]] = []
            self._databases[which].scan(data, _on_match, 0, ends, scratch)
            runs = [] if which == 1 else None
            if not ends:
                return [], runs
            lengths = self.lengths
            by_start = self._by_start
            count = len(lengths)
            found = []
            for index, start, end in ends:
                if index >= count:
                    runs.append(start)  # type: ignore[union-attr]
                elif index in by_start:
                    found.append((start, index, start + lengths[index]))
                else:
                    found.append((end - lengths[index], index, end))
            if runs:
                runs.sort()
        else:
            found = self._find_bytes(data, long)
        if not found:
            return found, runs
        if data is not None and len(data) != len(text):
            found = self._char_offsets(data, found)
        if data is None or self._databases is None:  # Hyperscan matched these with the literals
            if self.contexts:
                contexts = self.contexts
                found = [
                    hit for hit in found if hit[1] not in contexts or contexts[hit[1]].match(text, hit[2])
                ]
            if self.rejects:
                rejects = self.rejects
                found = [
                    hit
                    for hit in found
                    if hit[1] not in rejects or text[hit[2] : hit[2] + 1] not in rejects[hit[1]]
                ]
        return self.leftmost_first(found), runs

    def _find_bytes(self, data: bytes, long: bool) -> list[Hit]:
        found: list[Hit] = []
        lowered = b""
        for scan, indexes, any_case in self._scans_long if long else self._scans_short:
            if any_case and not lowered:
                lowered = data.lower()  # bytes.lower() changes ASCII only: every offset stays
            hits = scan(lowered if any_case else data)
            if hits:
                found += [(start, indexes[i], end) for i, start, end in hits]
        return found

    def _find_str(self, text: str, long: bool) -> list[Hit]:
        found: list[Hit] = []
        lowered = ""
        for number, group in enumerate(self.groups):
            if group.long_only and not long:
                continue
            if group.any_case and not lowered:
                lowered = text.lower()
            offset = self.offsets[number]
            hits = find_each(lowered if group.any_case else text, group.literals, overlapping=True)
            found += [(start, offset + i, end) for i, start, end in hits]
        return found

    def _char_offsets(self, data: bytes, hits: list[Hit]) -> list[Hit]:
        """Byte offsets into a non-ASCII text's UTF-8 as its character offsets (a hit starts on a character)."""
        hits.sort()
        lengths = self.char_lengths
        mapped: list[Hit] = []
        byte_at = char_at = 0
        for start, index, _end in hits:
            char_at += len(data[byte_at:start].decode("utf-8", "surrogatepass"))
            byte_at = start
            mapped.append((char_at, index, char_at + lengths[index]))
        return mapped

    def leftmost_first(self, hits: list[Hit]) -> list[Hit]:
        """Per group, what a leftmost-first automaton over that group reports; (start, index, end), sorted."""
        hits.sort()
        if len(hits) == 1:
            return hits
        group_of = self.group_of
        ends = [0] * len(self.groups)
        kept: list[Hit] = []
        for hit in hits:
            group = group_of[hit[1]]
            if hit[0] >= ends[group]:
                kept.append(hit)
                ends[group] = hit[2]
        return kept


def _pattern(literal: str, any_case: bool) -> bytes:
    """A literal as a Hyperscan pattern: every byte written as `\\xHH` (no character means anything), and an
    any-case letter as the class of both its cases."""
    parts = []
    for byte in literal.encode():
        char = chr(byte)
        if any_case and char.isascii() and char.isalpha():
            parts.append(f"[\\x{ord(char.lower()):02x}\\x{ord(char.upper()):02x}]")
        else:
            parts.append(f"\\x{byte:02x}")
    return "".join(parts).encode()


def _on_match(index: int, start: int, end: int, _flags: int, ends: list[tuple[int, int, int]]) -> None:
    ends.append((index, start, end))
