"""The cost model that decides where a generation's prefill starts.

A prompt can be computed three ways: prefilled whole from row 0; resumed from the rows the
engine already holds (truncate the tail, fill the rest); or resumed from a stored snapshot
(restore it, truncate to the shared prefix, fill the rest). Each is priced in seconds with
rates measured on the member itself, and the cheapest wins — resuming only when it is
expected to cost *less* than the whole prefill.

The spec prices a fill as the row-by-row decode path and, until a fill has been timed on the
member, assumes it costs ``ASSUMED_FILL_SLOWDOWN`` times a prefilled row. With that
assumption a resume must reuse more than 7/8 of the prompt to win, so a prompt that shares only
a chat header with what is stored is prefilled whole. Our engines fill the rest in batches;
once a fill has been timed, its measured rate replaces the assumption.

The live rows are not priced against the whole prefill: resuming from them truncates for free
and computes a tail of the very rows a prefill from row 0 would, through the same batched
prefill, so it cannot cost more. Pricing them with the assumed slowdown made a resend of an
abandoned long prefill (a client that timed out and asked again) start over from row 0 every
time, however many of its rows were already live.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

#: Until a fill after a resume has been timed on a member, a filled row is assumed to cost
#: this many times a prefilled row (the spec's "row-by-row path is 8 times slower a row").
ASSUMED_FILL_SLOWDOWN = 8.0
#: Prefill rate assumed before a member's first cold prefill is timed. It only scales the
#: restore term against the fill terms; SmolLM2-135M on 2 cores prefills ~250 rows/s.
ASSUMED_PREFILL_ROWS_PER_S = 200.0
#: Restore rate assumed before a member's first restore is timed: well below the ~6 GB/s
#: measured with llama.cpp's per-sequence state API, so a first guess errs toward prefilling.
ASSUMED_RESTORE_BYTES_PER_S = 1.0e9
#: How much an older measurement still weighs when a new one arrives (per measurement).
RATE_MEMORY = 0.75

Source = Literal["prefill", "live", "stored"]


class MeasuredRate:
    """A throughput (units per second) from timed operations, recent ones weighing most.

    Sums of units and seconds decay together, so a tiny timing (a 3-row fill whose fixed
    overhead dominates) counts for little next to a long one, as it should."""

    def __init__(self) -> None:
        self._units = 0.0
        self._seconds = 0.0
        self.samples = 0

    def record(self, units: float, seconds: float) -> None:
        if units <= 0 or seconds <= 0:
            return
        self._units = self._units * RATE_MEMORY + units
        self._seconds = self._seconds * RATE_MEMORY + seconds
        self.samples += 1

    @property
    def per_second(self) -> float | None:
        """The measured rate, or ``None`` until something has been timed."""
        return self._units / self._seconds if self.samples else None


@dataclass(frozen=True)
class RatesUsed:
    """The figures one decision weighed, and whether each was measured or assumed."""

    prefill_rows_per_s: float
    fill_rows_per_s: float
    restore_bytes_per_s: float
    prefill_measured: bool
    fill_measured: bool
    restore_measured: bool

    def describe(self) -> str:
        def mark(measured: bool) -> str:
            return "" if measured else " (assumed)"

        return (
            f"prefill {self.prefill_rows_per_s:.0f} rows/s{mark(self.prefill_measured)}, "
            f"fill {self.fill_rows_per_s:.0f} rows/s{mark(self.fill_measured)}, "
            f"restore {self.restore_bytes_per_s / 1e6:.0f} MB/s{mark(self.restore_measured)}"
        )


class MemberRates:
    """The rates measured on one member: cold prefills, fills after a resume, restores."""

    def __init__(self) -> None:
        self.prefill = MeasuredRate()
        self.fill = MeasuredRate()
        self.restore = MeasuredRate()

    def current(self) -> RatesUsed:
        prefill = self.prefill.per_second
        fill = self.fill.per_second
        restore = self.restore.per_second
        prefill_rate = prefill if prefill is not None else ASSUMED_PREFILL_ROWS_PER_S
        return RatesUsed(
            prefill_rows_per_s=prefill_rate,
            fill_rows_per_s=fill if fill is not None else prefill_rate / ASSUMED_FILL_SLOWDOWN,
            restore_bytes_per_s=restore if restore is not None else ASSUMED_RESTORE_BYTES_PER_S,
            prefill_measured=prefill is not None,
            fill_measured=fill is not None,
            restore_measured=restore is not None,
        )


@dataclass(frozen=True)
class Candidate:
    """One way to start a prompt: keep ``start`` rows (from the live rows or a snapshot of
    ``restore_bytes`` bytes) and compute the rest."""

    source: Source
    start: int
    restore_bytes: int = 0


@dataclass(frozen=True)
class PricedCandidate:
    candidate: Candidate
    seconds: float


@dataclass(frozen=True)
class ResumeDecision:
    """The chosen start, with every priced alternative and the rates behind the prices."""

    prompt_rows: int
    chosen: PricedCandidate
    alternatives: tuple[PricedCandidate, ...]
    rates: RatesUsed
    rule: str
    """Which rule chose: live rows are kept without being priced against the whole prefill, so
    the line must not read as if the cheapest price had won."""

    @property
    def start(self) -> int:
        return self.chosen.candidate.start

    def describe(self) -> str:
        """One log line: the choice and the rule that made it, then what it was weighed against
        and with which rates."""

        def show(priced: PricedCandidate) -> str:
            c = priced.candidate
            restore = f" restoring {c.restore_bytes / 1e6:.1f} MB" if c.restore_bytes else ""
            return f"{c.source} from row {c.start}{restore} ≈ {priced.seconds * 1000:.0f} ms"

        others = "; ".join(show(p) for p in self.alternatives if p is not self.chosen) or "nothing else"
        return (
            f"{self.prompt_rows}-row prompt: {show(self.chosen)}, {self.rule} (against {others}; "
            f"rates: {self.rates.describe()})"
        )


def price(candidate: Candidate, prompt_rows: int, rates: RatesUsed) -> float:
    """Expected seconds to have all ``prompt_rows`` rows computed starting from ``candidate``."""
    if candidate.source == "prefill":
        return prompt_rows / rates.prefill_rows_per_s
    restore = candidate.restore_bytes / rates.restore_bytes_per_s
    return restore + (prompt_rows - candidate.start) / rates.fill_rows_per_s


def decide(prompt_rows: int, resumable: list[Candidate], rates: RatesUsed) -> ResumeDecision:
    """Price the whole prefill and every resumable start; pick the cheapest, with one start
    never priced against the whole prefill: live rows sharing a prefix with the prompt. That
    resume computes a part of what a prefill from row 0 does, on the same path, so it takes the
    whole prefill's place as the start a snapshot must beat. Prices from assumed or noisy rates
    (a one-row fill timed on a busy machine is mostly fixed overhead) must not make the pool
    compute rows it already holds again. A snapshot has its restore to pay for, so it is chosen
    only when it is priced strictly cheaper than the start it would replace."""
    whole = PricedCandidate(Candidate("prefill", 0), price(Candidate("prefill", 0), prompt_rows, rates))
    priced = [whole]
    for candidate in resumable:
        if 0 < candidate.start < prompt_rows:
            priced.append(PricedCandidate(candidate, price(candidate, prompt_rows, rates)))
    live = [option for option in priced if option.candidate.source == "live"]
    chosen = max(live, key=lambda option: option.candidate.start) if live else whole
    replaced = chosen
    for option in priced:
        if option.candidate.source == "stored" and option.seconds < chosen.seconds:
            chosen = option
    snapshots = any(option.candidate.source == "stored" for option in priced)
    return ResumeDecision(
        prompt_rows=prompt_rows,
        chosen=chosen,
        alternatives=tuple(priced),
        rates=rates,
        rule=_rule(chosen, replaced, snapshots),
    )


def _rule(chosen: PricedCandidate, replaced: PricedCandidate, snapshots: bool) -> str:
    """The rule that chose, in the words of the log line."""
    source = chosen.candidate.source
    if source == "stored":
        beaten = "the live rows" if replaced.candidate.source == "live" else "the whole prefill"
        return f"the snapshot priced below {beaten}"
    if source == "live":
        kept = "live rows kept whatever the prefill's price"
        return f"{kept}, no snapshot priced below them" if snapshots else kept
    return "no snapshot priced below it" if snapshots else "nothing to resume"
