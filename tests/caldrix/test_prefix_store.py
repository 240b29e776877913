"""The prefix store's pure parts: the token trie, the LRU under a budget, the cost model.

The store is driven here through a small in-memory engine whose "rows" are the token ids
themselves (a fixed number of bytes per row), so budgets and evictions are exact; the real
model is exercised in test_prefix_resume.py.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Sequence

import pytest

from caldrix.engine_seam import MIN_FILL_ROWS, EngineCapabilities
from caldrix.limits import DEFAULT_BATCH
from caldrix.store.prefix_store import (
    CONTEXT_BUDGET_MAX,
    GIB,
    PrefixStore,
    common_prefix_length,
    default_context_budget,
    evaluate_in_batches,
)
from caldrix.store.resume_cost import (
    ASSUMED_FILL_SLOWDOWN,
    Candidate,
    MeasuredRate,
    MemberRates,
    RatesUsed,
    decide,
)
from caldrix.store.trie import TokenTrie

ROW_BYTES = 100


class RowsEngine:
    """Just the row primitives the store uses; a row is a token id padded to ROW_BYTES."""

    capabilities = EngineCapabilities(snapshots=True)
    prefill_batch = DEFAULT_BATCH

    def __init__(self) -> None:
        self.live: list[int] = []
        self.saves = 0
        self.loads = 0

    @property
    def live_tokens(self) -> Sequence[int]:
        return tuple(self.live)

    def truncate(self, n_rows: int) -> None:
        del self.live[n_rows:]

    def evaluate(self, tokens: Sequence[int]) -> None:
        self.live.extend(tokens)

    def save_rows(self) -> bytes:
        self.saves += 1
        return b"".join(struct.pack("<i", t).ljust(ROW_BYTES, b"\0") for t in self.live)

    def load_rows(self, data: bytes, tokens: Sequence[int]) -> None:
        self.loads += 1
        rows = [struct.unpack_from("<i", data, i * ROW_BYTES)[0] for i in range(len(data) // ROW_BYTES)]
        assert rows == list(tokens), "a snapshot was restored under the wrong tokens"
        self.live = rows


def run(
    store: PrefixStore,
    engine: RowsEngine,
    prompt: list[int],
    output: Sequence[int] = (),
    appended: bool = True,
) -> int:
    """What run_generation does around the store: prepare, fill, decode, remember."""
    start = store.prepare(engine, prompt)  # type: ignore[arg-type]
    assert list(engine.live) == prompt[:start]
    engine.evaluate(prompt[start:])
    engine.evaluate(output)
    store.remember(engine, len(prompt), appended=appended)  # type: ignore[arg-type]
    return start


def measured_rates(prefill: float, fill: float, restore: float) -> MemberRates:
    rates = MemberRates()
    rates.prefill.record(prefill, 1.0)
    rates.fill.record(fill, 1.0)
    rates.restore.record(restore, 1.0)
    return rates


SYSTEM = list(range(1000, 1100))


# -- the trie ---------------------------------------------------------------------------------


def test_trie_finds_the_longest_shared_prefix_even_inside_an_entry() -> None:
    trie: TokenTrie[str] = TokenTrie()
    trie.insert([1, 2, 3, 4, 5], "long")
    trie.insert([1, 2, 9], "fork")
    assert trie.longest_prefix([1, 2, 3, 7]).depth == 3
    assert trie.longest_prefix([1, 2, 3, 7]).holders == ("long",)
    assert sorted(trie.longest_prefix([1, 2]).holders) == ["fork", "long"]
    assert trie.longest_prefix([1, 2, 9, 9]).depth == 3
    assert trie.longest_prefix([8, 1]).depth == 0
    assert trie.longest_prefix([8, 1]).holders == ()


def test_trie_values_along_lists_entries_that_prefix_the_query() -> None:
    trie: TokenTrie[str] = TokenTrie()
    trie.insert([1, 2], "short")
    trie.insert([1, 2, 3, 4], "long")
    trie.insert([1, 5], "other")
    assert trie.values_along([1, 2, 3, 4, 5]) == ["short", "long"]
    assert trie.values_along([1, 2, 3]) == ["short"]


def test_trie_remove_keeps_the_others_reachable_and_compressed() -> None:
    trie: TokenTrie[str] = TokenTrie()
    trie.insert([1, 2, 3], "a")
    trie.insert([1, 2, 4], "b")
    trie.insert([1, 2], "c")
    assert len(trie) == 3
    assert trie.remove([1, 2]) == "c"
    assert trie.remove([1, 2]) is None
    assert trie.remove([1, 2, 3]) == "a"
    assert len(trie) == 1
    assert trie.get([1, 2, 4]) == "b"
    assert trie.longest_prefix([1, 2, 3]).depth == 2
    assert trie.remove([1, 2, 4]) == "b"
    assert trie.longest_prefix([1, 2, 4]).depth == 0


def test_trie_insert_replaces_the_value_under_the_same_tokens() -> None:
    trie: TokenTrie[str] = TokenTrie()
    trie.insert([5, 6], "old")
    trie.insert([5, 6], "new")
    assert len(trie) == 1
    assert trie.get([5, 6]) == "new"


# -- the cost model ---------------------------------------------------------------------------


def test_before_a_fill_is_timed_a_snapshot_must_hold_more_than_seven_eighths() -> None:
    rates = MemberRates()
    rates.prefill.record(200, 1.0)
    current = rates.current()
    assert current.fill_rows_per_s == 200 / ASSUMED_FILL_SLOWDOWN
    assert not current.fill_measured
    assert decide(1000, [Candidate("stored", 900, restore_bytes=1_000)], current).start == 900
    assert decide(1000, [Candidate("stored", 860, restore_bytes=1_000)], current).start == 0
    # A prompt sharing only a chat header with what is stored is prefilled whole.
    assert decide(1000, [Candidate("stored", 3, restore_bytes=69_000)], current).start == 0


def test_measured_fill_rate_lets_a_shorter_prefix_win() -> None:
    current = measured_rates(prefill=250, fill=240, restore=5e9).current()
    assert decide(1000, [Candidate("stored", 300, restore_bytes=7_000_000)], current).start == 300


def test_live_rows_of_the_same_prefix_are_resumed_whatever_the_rates() -> None:
    """Resuming from live rows computes a tail of what a prefill from row 0 computes, on the
    same path: no assumed slowdown and no noisy timing (a one-row fill on a busy machine is
    mostly fixed overhead) may make the pool start over. A client that resends a request whose
    long prefill it abandoned goes on from the rows computed, however few."""
    assumed = MemberRates().current()
    assert decide(12_000, [Candidate("live", 3_000)], assumed).start == 3_000
    noisy = measured_rates(prefill=1000, fill=1, restore=5e9).current()
    assert decide(30, [Candidate("live", 29)], noisy).start == 29
    assert decide(30, [Candidate("live", 2)], noisy).start == 2
    # A snapshot has its restore to pay for: it is priced, not preferred.
    assert decide(30, [Candidate("stored", 29, restore_bytes=1_000_000)], noisy).start == 0


def test_a_longer_snapshot_beats_the_live_rows_only_when_priced_cheaper() -> None:
    quick = measured_rates(prefill=250, fill=250, restore=5e9).current()
    options = [Candidate("live", 100), Candidate("stored", 900, restore_bytes=20_000_000)]
    assert decide(1000, options, quick).chosen.candidate.source == "stored"
    assumed = MemberRates().current()  # fill assumed 8 times slower: 800 rows saved still pay
    assert decide(1000, options, assumed).start == 900


def test_restore_cost_is_weighed_against_what_it_saves() -> None:
    current = measured_rates(prefill=250, fill=250, restore=1e6).current()  # a slow 1 MB/s restore
    options = [Candidate("live", 100), Candidate("stored", 900, restore_bytes=20_000_000)]
    choice = decide(1000, options, current)
    assert choice.chosen.candidate.source == "live"
    assert choice.start == 100


def test_decision_line_names_the_choice_alternatives_and_rates() -> None:
    current = measured_rates(prefill=250, fill=250, restore=5e9).current()
    line = decide(1000, [Candidate("stored", 950, restore_bytes=23_000_000)], current).describe()
    assert line.startswith("1000-row prompt: stored from row 950 restoring 23.0 MB")
    assert "prefill from row 0 ≈ 4000 ms" in line
    assert "prefill 250 rows/s, fill 250 rows/s, restore 5000 MB/s" in line


def test_decision_line_says_live_rows_were_kept_even_when_priced_above_the_prefill() -> None:
    """The rule keeps live rows without pricing them against the whole prefill: a line that
    showed only the prices would read as if the dearer start had won by price."""
    noisy = measured_rates(prefill=1000, fill=10, restore=5e9).current()
    line = decide(1000, [Candidate("live", 200)], noisy).describe()
    assert line.startswith(
        "1000-row prompt: live from row 200 ≈ 80000 ms, live rows kept whatever the prefill's price "
        "(against prefill from row 0 ≈ 1000 ms;"
    )
    with_snapshot = [Candidate("live", 200), Candidate("stored", 201, restore_bytes=5_000_000_000)]
    assert ", live rows kept whatever the prefill's price, no snapshot priced below them (" in (
        decide(1000, with_snapshot, noisy).describe()
    )


def test_decision_line_names_what_a_chosen_snapshot_beat() -> None:
    quick = measured_rates(prefill=250, fill=250, restore=5e9).current()
    snapshot = Candidate("stored", 900, restore_bytes=20_000_000)
    assert ", the snapshot priced below the live rows (" in (
        decide(1000, [Candidate("live", 100), snapshot], quick).describe()
    )
    assert ", the snapshot priced below the whole prefill (" in decide(1000, [snapshot], quick).describe()
    slow = measured_rates(prefill=250, fill=250, restore=1e3).current()
    assert ", no snapshot priced below it (" in decide(1000, [snapshot], slow).describe()


def test_measured_rate_weighs_long_timings_more_than_tiny_ones() -> None:
    rate = MeasuredRate()
    assert rate.per_second is None
    rate.record(2000, 10.0)
    rate.record(2, 1.0)
    assert rate.per_second is not None and 150 < rate.per_second < 200


def test_rates_used_describe_marks_assumptions() -> None:
    used = RatesUsed(200, 25, 1e9, True, False, False)
    assert used.describe() == "prefill 200 rows/s, fill 25 rows/s (assumed), restore 1000 MB/s (assumed)"


# -- the store --------------------------------------------------------------------------------


def test_default_budget_is_a_quarter_of_the_limit_capped_at_8_gib() -> None:
    assert default_context_budget(4 * GIB) == GIB
    assert default_context_budget(64 * GIB) == CONTEXT_BUDGET_MAX == 8 * GIB


@pytest.mark.parametrize(
    ("rows", "batches"), [(5, [5]), (8, [8]), (9, [7, 2]), (16, [8, 8]), (17, [8, 7, 2])]
)
def test_batches_never_end_with_a_single_row(rows: int, batches: list[int]) -> None:
    sizes: list[int] = []

    class Batched(RowsEngine):
        prefill_batch = 8

        def evaluate(self, tokens: Sequence[int]) -> None:
            sizes.append(len(tokens))
            super().evaluate(tokens)

    engine = Batched()
    evaluate_in_batches(engine, list(range(rows)))  # type: ignore[arg-type]
    assert engine.live == list(range(rows))
    assert sizes == batches


def test_common_prefix_length() -> None:
    assert common_prefix_length([1, 2, 3], [1, 2, 4, 5]) == 2
    assert common_prefix_length([], [1]) == 0


def test_a_stored_prefix_is_restored_and_always_leaves_two_rows_to_evaluate() -> None:
    store, engine = PrefixStore(10**6), RowsEngine()
    store.rates = measured_rates(prefill=250, fill=250, restore=1e9)
    prompt = [*SYSTEM, 1, 2, 3]
    assert run(store, engine, prompt, appended=False) == 0
    engine.live = []  # another member's work, say: the live rows are gone
    assert run(store, engine, prompt, appended=False) == len(prompt) - MIN_FILL_ROWS
    assert engine.loads == 1
    assert store.stats()["hits"] == 1 and store.stats()["misses"] == 1


def test_live_rows_serve_without_a_copy() -> None:
    store, engine = PrefixStore(10**6), RowsEngine()
    prompt = [*SYSTEM, 1, 2, 3]
    run(store, engine, prompt, output=[7, 8])
    assert run(store, engine, [*prompt, 7, 8, 9, 10]) == len(prompt) + 2
    assert engine.loads == 0


def test_a_probe_keeps_its_prompt_rows_and_an_appended_turn_its_output() -> None:
    store, engine = PrefixStore(10**6), RowsEngine()
    probe = [*SYSTEM, 5, 5]
    run(store, engine, probe, output=[40, 41], appended=False)
    # The last prompt row may come from a one-row batch, so a probe keeps the rows before it.
    assert store.stats()["bytes"] == (len(probe) - 1) * ROW_BYTES
    turn = [*SYSTEM, 6]
    run(store, engine, turn, output=[50, 51], appended=True)
    assert store.stats()["entries"] == 2
    assert store.stats()["bytes"] == (len(probe) - 1 + len(turn) + 2) * ROW_BYTES


class OneRowExactEngine(RowsEngine):
    """An engine whose one-row batches compute what longer ones do (ctransformers)."""

    capabilities = EngineCapabilities(snapshots=False, min_fill_rows=1)

    def __init__(self) -> None:
        super().__init__()
        self.batches: list[int] = []

    def evaluate(self, tokens: Sequence[int]) -> None:
        self.batches.append(len(tokens))
        super().evaluate(tokens)


def test_an_engine_exact_in_one_row_batches_recomputes_only_the_last_prompt_row() -> None:
    store, engine = PrefixStore(10**6), OneRowExactEngine()
    prompt = [*SYSTEM, 5, 5]
    run(store, engine, prompt, output=[40, 41], appended=False)
    assert engine.live == prompt  # the probe's output dropped, every prompt row kept
    assert run(store, engine, prompt, appended=False) == len(prompt) - 1
    engine.batches.clear()
    run(store, engine, prompt, output=[50, 51], appended=True)
    assert engine.batches == [1, 2]  # the last prompt row and the output: nothing recomputed
    assert engine.live == [*prompt, 50, 51]
    assert run(store, engine, [*prompt, 50, 51, 52]) == len(prompt) + 2


def test_a_snapshot_already_contained_in_another_is_not_stored_again() -> None:
    store, engine = PrefixStore(10**6), RowsEngine()
    run(store, engine, [*SYSTEM, 1, 2], output=[3, 4])
    saves = engine.saves
    run(store, engine, [*SYSTEM, 1], appended=False)
    assert engine.saves == saves
    assert store.stats()["entries"] == 1


def test_a_longer_snapshot_replaces_the_ones_it_contains() -> None:
    store, engine = PrefixStore(10**6), RowsEngine()
    run(store, engine, [*SYSTEM, 1], output=[2])
    run(store, engine, [*SYSTEM, 1, 2, 3], output=[4])
    assert store.stats()["entries"] == 1
    assert store.stats()["bytes"] == (len(SYSTEM) + 4) * ROW_BYTES


def test_budget_zero_keeps_nothing_but_the_live_rows_still_serve() -> None:
    store, engine = PrefixStore(0), RowsEngine()
    prompt = [*SYSTEM, 1]
    run(store, engine, prompt, output=[2])
    assert store.stats() == {"entries": 0, "bytes": 0, "budget": 0, "hits": 0, "misses": 1}
    assert engine.saves == 0
    assert run(store, engine, [*prompt, 2, 3]) == len(prompt)  # two rows left to compute


def test_least_recently_used_snapshot_is_evicted_first() -> None:
    entry_bytes = (len(SYSTEM) + 1) * ROW_BYTES  # a probe keeps all but its last prompt row
    store, engine = PrefixStore(2 * entry_bytes), RowsEngine()
    store.rates = measured_rates(prefill=250, fill=250, restore=1e9)
    a, b, c = ([*SYSTEM, x, x] for x in (1, 2, 3))
    run(store, engine, a, appended=False)
    run(store, engine, b, appended=False)
    run(store, engine, a, appended=False)  # a becomes the most recently used
    run(store, engine, c, appended=False)  # evicts b
    assert store.stats()["entries"] == 2
    assert store.stats()["bytes"] <= store.budget
    assert store.stored_prefix([*a, 9]) == len(a) - 1
    assert store.stored_prefix([*b, 9]) == len(SYSTEM)  # b's own rows are gone
    assert store.stored_prefix([*c, 9]) == len(c) - 1


def test_an_evicted_prefix_costs_a_full_prefill_not_a_refusal(caplog: pytest.LogCaptureFixture) -> None:
    entry_bytes = (len(SYSTEM) + 1) * ROW_BYTES
    store, engine = PrefixStore(entry_bytes), RowsEngine()
    caplog.set_level(logging.INFO, logger="caldrix.prefix_store")
    run(store, engine, [*SYSTEM, 1], appended=False)
    run(store, engine, [2, *SYSTEM], appended=False)  # evicts the first
    engine.live = []
    assert run(store, engine, [*SYSTEM, 1], appended=False) == 0
    assert any("evicted" in r.message for r in caplog.records)


def test_a_snapshot_larger_than_the_budget_is_not_kept() -> None:
    store, engine = PrefixStore(5 * ROW_BYTES), RowsEngine()
    run(store, engine, [*SYSTEM, 1], appended=False)
    assert store.stats()["entries"] == 0 and store.stats()["bytes"] == 0


def test_every_decision_is_logged_with_its_figures(caplog: pytest.LogCaptureFixture) -> None:
    store, engine = PrefixStore(10**6, member="main"), RowsEngine()
    caplog.set_level(logging.INFO, logger="caldrix.prefix_store")
    run(store, engine, [*SYSTEM, 1])
    decisions = [r.message for r in caplog.records if "-row prompt" in r.message]
    assert decisions == [
        "main: 101-row prompt: prefill from row 0 ≈ 505 ms, nothing to resume (against nothing else; "
        "rates: prefill 200 "
        "rows/s (assumed), fill 25 rows/s (assumed), restore 1000 MB/s (assumed))"
    ]


def test_prefill_timings_feed_the_rates() -> None:
    store, engine = PrefixStore(10**6), RowsEngine()
    prompt = [*SYSTEM, 1]
    store.prepare(engine, prompt)  # type: ignore[arg-type]
    engine.evaluate(prompt)
    store.remember(engine, len(prompt), prefill_ms=500.0)  # type: ignore[arg-type]
    assert store.rates.prefill.per_second == pytest.approx(202.0, rel=0.01)
    fills = store.rates.fill.samples
    longer = [*prompt, 2, 3]
    start = store.prepare(engine, longer)  # type: ignore[arg-type]
    engine.evaluate(longer[start:])
    store.remember(engine, len(longer), prefill_ms=10.0)  # type: ignore[arg-type]
    assert start > 0
    assert store.rates.fill.samples > fills


def test_a_negative_budget_is_refused() -> None:
    with pytest.raises(ValueError, match="0 or more bytes"):
        PrefixStore(-1)
