"""The prefix store on the real model: a resumed generation is the same as a full prefill.

Each shape runs a generation that leaves a snapshot, then a second prompt that resumes from
it, and compares the second's greedy output with a full prefill of the same prompt. Between
the two, the live rows are cleared (as if another context had run), so the rows come back
from a snapshot rather than from the live rows.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence

import pytest

from caldrix.engine_seam import GenerationCancelled, GenerationParams, GenerationResult, ServingFlags
from caldrix.engines.llamacpp import LlamaCppEngine, open_llamacpp
from caldrix.generation.decoding import common_prefix_length
from caldrix.generation.templates import render_context
from caldrix.store.prefix_store import PrefixStore
from tests.caldrix.sinks import CollectingSink
from tests.default_model import default_model_path

pytestmark = pytest.mark.model

SMOLLM2 = default_model_path()
GREEDY = GenerationParams(max_new_tokens=16)
BUDGET = 256 * 1024 * 1024

SYSTEM = (
    "You are Aerix, a coding agent working in the user's repository on their own machine. "
    "Work in small steps: look before you change, change only what the request needs, and check "
    "your work by running the project's own commands."
)
INSTRUCTIONS = "\n".join(
    f"- Rule {i}: modules in package area {i} keep functions short, name things plainly, "
    f"and run `make check-{i}` before committing."
    for i in range(8)
)


def segment(sid: str, role: str, text: str) -> dict[str, object]:
    return {"id": sid, "role": role, "text": text, "pinned": False}


def context(*extra: dict[str, object]) -> list[dict[str, object]]:
    return [segment("system", "system", SYSTEM), segment("rules", "system", INSTRUCTIONS), *extra]


@pytest.fixture(scope="module")
def engine() -> Iterator[LlamaCppEngine]:
    loaded = open_llamacpp(SMOLLM2, ServingFlags(ctx=2048, threads=1))
    yield loaded
    loaded.close()


def prompt_of(engine: LlamaCppEngine, segments: Sequence[dict[str, object]]) -> list[int]:
    return render_context(engine, segments).prompt_tokens


def segment_rows(engine: LlamaCppEngine, segments: Sequence[dict[str, object]]) -> int:
    """Rows the segments themselves take, without the generation prompt after them."""
    return sum(len(tokens) for tokens in render_context(engine, segments).segment_tokens)


def generate(
    store: PrefixStore, engine: LlamaCppEngine, prompt: Sequence[int], appended: bool = True
) -> GenerationResult:
    return store.generate(engine, prompt, GREEDY, CollectingSink(), appended=appended)


def full_prefill(engine: LlamaCppEngine, prompt: Sequence[int]) -> GenerationResult:
    engine.truncate(0)
    result = generate(PrefixStore(0), engine, prompt)
    assert result.recomputed_from == 0
    return result


def test_shared_system_prefix_resumes_and_matches_a_full_prefill(engine: LlamaCppEngine) -> None:
    store = PrefixStore(BUDGET)
    first = prompt_of(engine, context(segment("u1", "user", "Explain what rule 3 asks for.")))
    second = prompt_of(engine, context(segment("u1", "user", "List the make targets in rule 7.")))
    engine.truncate(0)
    assert generate(store, engine, first, appended=False).recomputed_from == 0
    engine.truncate(0)
    resumed = generate(store, engine, second, appended=False)
    assert resumed.recomputed_from == common_prefix_length(first, second)
    assert resumed.recomputed_from >= segment_rows(engine, context())
    assert resumed.output_token_ids == full_prefill(engine, second).output_token_ids
    assert store.stats()["hits"] == 1 and store.stats()["misses"] == 1


def test_a_fork_resumes_after_the_kept_turn(engine: LlamaCppEngine) -> None:
    store = PrefixStore(BUDGET)
    asked = context(segment("u1", "user", "Which rule mentions area 5?"))
    engine.truncate(0)
    answer = generate(store, engine, prompt_of(engine, asked))
    kept_rows = tuple(engine.live_tokens)  # the appended turn keeps prompt and output
    forked = [*asked, segment("a1", "assistant", answer.text), segment("u2", "user", "And area 9?")]
    fork_prompt = prompt_of(engine, forked)
    engine.truncate(0)
    resumed = generate(store, engine, fork_prompt)
    assert resumed.recomputed_from == common_prefix_length(kept_rows, fork_prompt)
    assert resumed.recomputed_from > len(prompt_of(engine, asked))  # into the kept answer
    assert resumed.output_token_ids == full_prefill(engine, fork_prompt).output_token_ids


def test_an_edited_middle_segment_recomputes_from_the_edit(engine: LlamaCppEngine) -> None:
    store = PrefixStore(BUDGET)
    before = prompt_of(
        engine,
        context(
            segment("tool", "user", "Tool output: tests passed in area 4, 12 files checked."),
            segment("u2", "user", "Summarize."),
        ),
    )
    after = prompt_of(
        engine,
        context(
            segment("tool", "user", "Tool output: tests failed in area 4, 12 files checked."),
            segment("u2", "user", "Summarize."),
        ),
    )
    engine.truncate(0)
    generate(store, engine, before, appended=False)
    engine.truncate(0)
    resumed = generate(store, engine, after, appended=False)
    edit_row = common_prefix_length(before, after)
    assert segment_rows(engine, context()) < edit_row < len(after) - 5
    assert resumed.recomputed_from == edit_row
    assert resumed.output_token_ids == full_prefill(engine, after).output_token_ids


def test_an_evicted_entry_costs_a_full_prefill(engine: LlamaCppEngine) -> None:
    first = prompt_of(engine, context(segment("u1", "user", "What does rule 2 say?")))
    other = prompt_of(engine, [segment("s", "system", "Answer briefly."), segment("u", "user", "Hi.")])
    engine.truncate(0)
    generate(PrefixStore(BUDGET), engine, first, appended=False)
    one_entry = len(engine.save_rows())  # the budget holds exactly the first prompt's rows
    store = PrefixStore(one_entry)
    engine.truncate(0)
    generate(store, engine, first, appended=False)
    assert store.stats()["entries"] == 1
    generate(store, engine, other, appended=False)  # evicts the first
    engine.truncate(0)
    again = generate(store, engine, first, appended=False)
    # Only the chat header it shares with the other prompt can come back; the rest is computed.
    assert again.recomputed_from <= common_prefix_length(first, other) < 8
    assert again.output_token_ids == full_prefill(engine, first).output_token_ids


def test_the_next_turn_resumes_from_the_live_rows_without_a_copy(engine: LlamaCppEngine) -> None:
    store = PrefixStore(BUDGET)
    asked = context(segment("u1", "user", "Name one rule."))
    engine.truncate(0)
    answer = generate(store, engine, prompt_of(engine, asked))
    live = tuple(engine.live_tokens)
    stored_bytes = store.stats()["bytes"]
    turn = [*asked, segment("a1", "assistant", answer.text), segment("u2", "user", "Another.")]
    next_prompt = prompt_of(engine, turn)
    resumed = generate(store, engine, next_prompt)
    assert resumed.recomputed_from == common_prefix_length(live, next_prompt)
    assert store.stats()["hits"] == 1
    assert store.stats()["entries"] == 1 and store.stats()["bytes"] > stored_bytes  # replaced
    assert resumed.output_token_ids == full_prefill(engine, next_prompt).output_token_ids


def test_a_prompt_sharing_only_the_chat_header_is_prefilled_whole(engine: LlamaCppEngine) -> None:
    store = PrefixStore(BUDGET)
    engine.truncate(0)
    generate(store, engine, prompt_of(engine, context(segment("u", "user", "Hello."))), appended=False)
    engine.truncate(0)
    unrelated = prompt_of(engine, [segment("s", "system", INSTRUCTIONS), segment("u", "user", "Hello.")])
    assert 0 < store.stored_prefix(unrelated) < len(unrelated) // 8
    assert generate(store, engine, unrelated, appended=False).recomputed_from == 0


class CancelHalfway(CollectingSink):
    """Cancels once the prefill has passed half the prompt: a client that gave up waiting."""

    def __init__(self) -> None:
        super().__init__()
        self.halfway = False

    def progress(self, done: int, total: int) -> None:
        super().progress(done, total)
        self.halfway = self.halfway or done >= total // 2

    def cancelled(self) -> bool:
        return self.halfway


def long_prompt(engine: LlamaCppEngine) -> list[int]:
    body = "\n".join(f"Tool output line {i}: area {i % 9} checked, {i * 7} files." for i in range(60))
    return prompt_of(engine, context(segment("tool", "user", body), segment("u", "user", "Summarize.")))


def abandon(store: PrefixStore, engine: LlamaCppEngine, prompt: Sequence[int]) -> int:
    """Start ``prompt`` on a fresh engine and cancel it halfway; returns the rows it computed."""
    engine.truncate(0)
    with pytest.raises(GenerationCancelled):
        store.generate(engine, prompt, GREEDY, CancelHalfway(), appended=True)
    computed = common_prefix_length(engine.live_tokens, prompt)
    # Past half the prompt, less the last row, which the store may settle back by one. Where
    # the cancel lands depends on the batch sizes, which follow the measured rate.
    assert len(prompt) // 2 - 1 <= computed < len(prompt)
    return computed


def test_a_resent_prompt_goes_on_from_the_rows_its_cancelled_prefill_computed(
    engine: LlamaCppEngine, caplog: pytest.LogCaptureFixture
) -> None:
    """Claude Code resends a request whose first token took too long; the resend must not
    start the prefill over (it would time out again, for ever)."""
    store = PrefixStore(BUDGET)
    prompt = long_prompt(engine)
    computed = abandon(store, engine, prompt)
    with caplog.at_level(logging.INFO, logger="caldrix.prefix_store"):
        resent = generate(store, engine, prompt)
    assert resent.recomputed_from >= computed - 1  # the last row may be batched again
    assert f"{len(prompt)}-row prompt: live from row {resent.recomputed_from}" in caplog.text
    assert resent.output_token_ids == full_prefill(engine, prompt).output_token_ids


def test_a_cancelled_prefill_keeps_its_rows_as_a_snapshot(engine: LlamaCppEngine) -> None:
    """Another context may use the live rows before the resend arrives (a subagent's request):
    the abandoned rows are kept in the store as well."""
    store = PrefixStore(BUDGET)
    prompt = long_prompt(engine)
    computed = abandon(store, engine, prompt)
    assert store.stored_prefix(prompt) >= computed - 1
    assert store.stats()["entries"] == 1
