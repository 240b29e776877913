"""The resident prefix store of one member: KV snapshots keyed by the token ids they hold.

Every context on a member renders to a prompt that mostly starts like the others (the same
system and instruction segments), so the store keeps snapshots of computed rows and lets a
generation start from the longest prefix already computed:

- **Lookup** walks a radix tree over token ids (:mod:`caldrix.store.trie`). A snapshot of n
  rows serves every shorter prefix of itself: restore it, then drop the rows past the match.
- **No copy** when the engine's live rows already hold the prefix: truncating them is free.
- **The cost model** (:mod:`caldrix.store.resume_cost`) resumes only when restoring and filling the
  rest is expected to cost less than prefilling the whole prompt, with rates measured here.
- **Storing** happens after every generation: an appended turn keeps its prompt and output
  rows (the output recomputed as one batch first where the engine needs it, see
  :data:`~caldrix.engine_seam.MIN_FILL_ROWS`), a probe (no
  ``append``) only its prompt rows. A snapshot that another snapshot already
  contains is not stored again; one that contains older snapshots replaces them.
- **Budget**: snapshots are dropped least recently used first to stay under ``budget`` bytes;
  ``0`` keeps none (the live rows still serve). An evicted prefix only costs a prefill.

All methods run on the member's engine thread; :meth:`PrefixStore.stats` may be read from
any thread (it copies plain integers).
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from caldrix.engine_seam import (
    Engine,
    GenerationCancelled,
    GenerationParams,
    GenerationResult,
    GenerationSink,
    RowsSnapshot,
)
from caldrix.generation.decoding import batch_end, common_prefix_length, run_generation
from caldrix.store.resume_cost import Candidate, MemberRates, ResumeDecision, decide
from caldrix.store.trie import TokenTrie

logger = logging.getLogger("caldrix.prefix_store")

GIB = 1 << 30
# Rows always left to compute after a resume: the engine's ``capabilities.min_fill_rows``,
# MIN_FILL_ROWS (2) unless it declares fewer. llama.cpp evaluates a one-row batch through a
# different matmul path than a longer one, and its rows and logits differ slightly (up to ~0.6
# in a logit on SmolLM2-135M); filling two or more rows gives exactly the logits that a whole
# prefill gives, so a resumed greedy generation matches a fresh one. An engine whose one-row
# batches compute what longer ones do (ctransformers) declares 1: then only the prompt's last
# row is recomputed, and decoded rows are kept as they are.

#: ``--context-budget`` defaults to this share of the memory limit…
CONTEXT_BUDGET_SHARE = 0.25
#: …and to at most this many bytes.
CONTEXT_BUDGET_MAX = 8 * GIB


def default_context_budget(memory_limit_bytes: int) -> int:
    """The prefix-store budget per member when ``--context-budget`` is not given."""
    return min(int(memory_limit_bytes * CONTEXT_BUDGET_SHARE), CONTEXT_BUDGET_MAX)


@dataclass(eq=False)
class _Entry:
    tokens: tuple[int, ...]
    data: RowsSnapshot

    @property
    def nbytes(self) -> int:
        return len(self.data)


@dataclass
class _LastStart:
    """Where :meth:`PrefixStore.prepare` started the latest generation, kept until
    :meth:`PrefixStore.remember` reports how long computing the rest took."""

    start: int
    prompt_rows: int


def evaluate_in_batches(engine: Engine, tokens: Sequence[int]) -> None:
    """Evaluate ``tokens`` in batches of the engine's prefill size, none shorter than the
    engine's ``min_fill_rows`` where there are that many (``batch_end``)."""
    fill = engine.capabilities.min_fill_rows
    size = max(fill, engine.prefill_batch)
    done = 0
    while done < len(tokens):
        end = batch_end(done, size, len(tokens), fill)
        engine.evaluate(tokens[done:end])
        done = end


class PrefixStore:
    """One member's prefix store; implements :class:`caldrix.engine_seam.ResumePolicy`."""

    def __init__(self, budget_bytes: int, member: str = "member") -> None:
        if budget_bytes < 0:
            raise ValueError(f"the context budget must be 0 or more bytes, not {budget_bytes}")
        self.budget = budget_bytes
        self.member = member
        self.rates = MemberRates()
        self._trie: TokenTrie[_Entry] = TokenTrie()
        self._lru: OrderedDict[tuple[int, ...], _Entry] = OrderedDict()
        self._bytes = 0
        self._hits = 0
        self._misses = 0
        self._last: _LastStart | None = None

    # -- ResumePolicy ---------------------------------------------------------------------

    def prepare(self, engine: Engine, prompt_tokens: Sequence[int]) -> int:
        """Put the cheapest start for ``prompt_tokens`` in the engine's live rows and return
        its row count (always leaving at least the engine's ``min_fill_rows`` to evaluate)."""
        decision, stored = self._decide(engine, prompt_tokens)
        chosen = decision.chosen.candidate
        if chosen.source == "stored" and stored is not None:
            self._restore(engine, stored, chosen.start)
        else:
            engine.truncate(chosen.start)
        resumed = chosen.start > 0
        if resumed:
            self._hits += 1
        else:
            self._misses += 1
        self._last = _LastStart(chosen.start, len(prompt_tokens))
        logger.info("%s: %s", self.member, decision.describe())
        return chosen.start

    def remember(
        self,
        engine: Engine,
        prompt_len: int,
        *,
        appended: bool = True,
        prefill_ms: float | None = None,
    ) -> None:
        """After a generation: learn from its compute time (``prefill_ms``: rows ``k`` to
        ``prompt_len``, restores excluded) and store its rows — prompt and output for an
        appended turn, the prompt alone for a probe (``appended=False``)."""
        last, self._last = self._last, None
        if prefill_ms is not None and last is not None and last.prompt_rows == prompt_len:
            self.record_compute(last.start, prompt_len, prefill_ms / 1000.0)
        self.store(engine, self._settle_rows(engine, prompt_len, appended))

    def generate(
        self,
        engine: Engine,
        prompt_tokens: Sequence[int],
        params: GenerationParams,
        sink: GenerationSink,
        *,
        appended: bool,
        defer: Callable[[Callable[[], None]], None] | None = None,
    ) -> GenerationResult:
        """Run one generation with this store as its resume policy: what a member does for
        every ``generate`` request (and the benchmarks and tests, driving an engine directly).
        With ``defer`` (the member thread's), keeping the rows waits until the caller has its
        result, so the ``done`` frame is not held back by the store's work."""
        policy = GenerationResume(self, appended=appended, defer=defer)
        try:
            return run_generation(engine, prompt_tokens, params, sink, policy)
        except GenerationCancelled as cancelled:
            self.keep_abandoned(engine, prompt_tokens, cancelled.partial.prefill_ms)
            raise

    def keep_abandoned(self, engine: Engine, prompt_tokens: Sequence[int], elapsed_ms: float | None) -> None:
        """A generation was cancelled (its client left): keep the prompt rows it computed, as
        a snapshot too, so the same prompt asked again resumes from them even after another
        context has used the live rows. A client that times out during a long prefill and
        resends (Claude Code does after minutes without a first token) then goes on where its
        abandoned request stopped instead of starting over every time. The rows computed
        before the cancel are also a prefill timing, kept like a finished one's."""
        last, self._last = self._last, None
        computed = common_prefix_length(engine.live_tokens, prompt_tokens)
        if last is not None and elapsed_ms and computed > last.start:
            self.record_compute(last.start, computed, elapsed_ms / 1000.0)
        engine.truncate(computed)  # output rows of a decode that was cancelled are not kept
        kept = self._settle_rows(engine, computed, appended=False)
        logger.info(
            "%s: a cancelled generation computed %d of its %d prompt rows; they stay resumable",
            self.member,
            computed,
            len(prompt_tokens),
        )
        self.store(engine, kept)

    # -- measurements -----------------------------------------------------------------------

    def record_compute(self, start: int, prompt_rows: int, seconds: float) -> None:
        """A prompt's rows from ``start`` on were computed in ``seconds``: a cold prefill
        when ``start`` is 0, a fill after a resume otherwise."""
        rows = prompt_rows - start
        if start == 0:
            self.rates.prefill.record(rows, seconds)
        else:
            self.rates.fill.record(rows, seconds)

    # -- storing --------------------------------------------------------------------------

    def store(self, engine: Engine, tokens: tuple[int, ...]) -> None:
        """Keep a snapshot of the engine's first ``len(tokens)`` live rows (which hold
        ``tokens``), unless a stored snapshot already holds them or the budget cannot."""
        if not tokens or self.budget == 0 or not engine.capabilities.snapshots:
            return
        covered = self._trie.longest_prefix(tokens)
        if covered.depth == len(tokens) and covered.holders:
            self._touch(min(covered.holders, key=lambda e: e.nbytes))
            return
        if len(engine.live_tokens) > len(tokens):
            # Snapshots take the whole sequence, so drop a probe's output rows first; a probe's
            # output is not part of its context and is never resumed from.
            engine.truncate(len(tokens))
        started = time.perf_counter()
        data = engine.save_rows()
        saved_ms = (time.perf_counter() - started) * 1000
        if len(data) > self.budget:
            logger.info(
                "%s: %d-row snapshot (%.1f MB) exceeds the budget of %.1f MB; not kept",
                self.member,
                len(tokens),
                len(data) / 1e6,
                self.budget / 1e6,
            )
            return
        for contained in self._trie.values_along(tokens):
            self._drop(contained)  # the new snapshot serves every prefix these served
        while self._bytes + len(data) > self.budget and self._lru:
            evicted = next(iter(self._lru.values()))
            self._drop(evicted)
            logger.info(
                "%s: evicted a %d-row snapshot (least recently used)", self.member, len(evicted.tokens)
            )
        entry = _Entry(tokens=tokens, data=data)
        self._trie.insert(tokens, entry)
        self._lru[tokens] = entry
        self._bytes += entry.nbytes
        logger.info(
            "%s: stored a %d-row snapshot (%.1f MB in %.0f ms); %d entries, %.1f of %.1f MB",
            self.member,
            len(tokens),
            entry.nbytes / 1e6,
            saved_ms,
            len(self._lru),
            self._bytes / 1e6,
            self.budget / 1e6,
        )

    def clear(self) -> None:
        """Forget every snapshot (the member is unloading)."""
        for entry in list(self._lru.values()):
            self._drop(entry)

    def stored_prefix(self, tokens: Sequence[int]) -> int:
        """How many leading ``tokens`` some stored snapshot holds (0 when none)."""
        return self._trie.longest_prefix(tokens).depth

    def stats(self) -> dict[str, int]:
        """The figures ``pool.status`` reports for this member."""
        return {
            "entries": len(self._lru),
            "bytes": self._bytes,
            "budget": self.budget,
            "hits": self._hits,
            "misses": self._misses,
        }

    # -- helpers --------------------------------------------------------------------------

    def _settle_rows(self, engine: Engine, prompt_len: int, appended: bool) -> tuple[int, ...]:
        """Leave only live rows that a batched prefill of the same tokens would have computed,
        and return their tokens: the prompt and output of an appended turn, the prompt of a
        probe.

        Output rows were computed one token at a time by the decode loop, and a one-row batch
        goes through a different matmul path in llama.cpp: its rows differ slightly from
        batched ones (enough to change a greedy choice later). So the output rows are computed
        again as a batch, from the prompt's last row (whose batch may also have been a single
        row). A probe's output is never kept, and its last prompt row is left out for the same
        reason. An engine whose one-row batches compute what longer ones do
        (``min_fill_rows`` 1) keeps its rows as they are."""
        live = tuple(engine.live_tokens)
        keep = live if appended else live[:prompt_len]
        fill = engine.capabilities.min_fill_rows
        if fill <= 1:
            engine.truncate(len(keep))
            return keep
        redo_from = max(0, min(prompt_len, len(keep)) - 1)
        if len(keep) - redo_from < fill:
            engine.truncate(redo_from)
            return keep[:redo_from]
        engine.truncate(redo_from)
        started = time.perf_counter()
        evaluate_in_batches(engine, keep[redo_from:])
        self.rates.fill.record(len(keep) - redo_from, time.perf_counter() - started)
        return keep

    def _decide(self, engine: Engine, prompt_tokens: Sequence[int]) -> tuple[ResumeDecision, _Entry | None]:
        """Price the whole prefill, the live rows and the best stored snapshot (the smallest
        one holding the longest shared prefix); return the decision and that snapshot."""
        # Some prompt rows must be evaluated: logits are not part of the KV rows, and on some
        # engines the last batch must hold more than one row (``min_fill_rows``, by default 2).
        least_rows = max(1, engine.capabilities.min_fill_rows)
        limit = max(0, len(prompt_tokens) - least_rows)
        live_start = min(common_prefix_length(engine.live_tokens, prompt_tokens), limit)
        candidates = [Candidate("live", live_start)]
        match = self._trie.longest_prefix(prompt_tokens)
        stored_start = min(match.depth, limit)
        cheapest: _Entry | None = None
        if stored_start > live_start and match.holders:
            cheapest = min(match.holders, key=lambda e: e.nbytes)
            candidates.append(Candidate("stored", stored_start, cheapest.nbytes))
        decision = decide(len(prompt_tokens), candidates, self.rates.current())
        return decision, cheapest

    def _restore(self, engine: Engine, entry: _Entry, start: int) -> None:
        started = time.perf_counter()
        engine.load_rows(entry.data, entry.tokens)
        engine.truncate(start)
        self.rates.restore.record(entry.nbytes, time.perf_counter() - started)
        self._touch(entry)

    def _touch(self, entry: _Entry) -> None:
        self._lru.move_to_end(entry.tokens)

    def _drop(self, entry: _Entry) -> None:
        self._trie.remove(entry.tokens)
        del self._lru[entry.tokens]
        self._bytes -= entry.nbytes


class GenerationResume:
    """A :class:`PrefixStore` bound to one generation: whether its output is appended."""

    def __init__(
        self, store: PrefixStore, *, appended: bool, defer: Callable[[Callable[[], None]], None] | None = None
    ) -> None:
        self._store = store
        self._appended = appended
        self._defer = defer

    def prepare(self, engine: Engine, prompt_tokens: Sequence[int]) -> int:
        return self._store.prepare(engine, prompt_tokens)

    def remember(self, engine: Engine, prompt_len: int, *, prefill_ms: float | None = None) -> None:
        def keep() -> None:
            self._store.remember(engine, prompt_len, appended=self._appended, prefill_ms=prefill_ms)

        if self._defer is None:
            keep()
        else:
            self._defer(keep)
