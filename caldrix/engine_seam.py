"""The engine seam: what a model backend must provide to serve as a member.

An engine owns one loaded model and the KV rows of a single sequence (``--max-batch 1``).
It offers primitives only — tokenize, evaluate rows, read logits, truncate, snapshot —
and the shared code in :mod:`caldrix.generation.decoding` runs the generation loop over them, so
constraints, sampling, stop strings, logprobs and progress behave the same on every engine.

Threading: every method except :meth:`Engine.tokenize` and the read-only properties runs on
the member's engine thread. ``tokenize`` must be safe to call from any thread (contexts are
counted on the event loop's worker threads while a generation runs).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Literal, Protocol, TypeAlias, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from caldrix.limits import DEFAULT_BATCH, FLASH_ATTENTION_EXACT_ROWS, SIMILAR_LINE_MIN_LETTERS

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    from llguidance import LLTokenizer

ConstraintKind = Literal["json", "one_of", "regex", "lark"]
ALL_CONSTRAINTS: tuple[ConstraintKind, ...] = ("json", "one_of", "regex", "lark")

#: The fewest prompt rows a resumed generation computes, unless its engine declares fewer
#: (:attr:`EngineCapabilities.min_fill_rows`): llama.cpp computes a one-row batch through
#: another matrix-multiply path, whose rows and logits differ from a prefill's
#: (docs/prefix-store.md, Correctness), so two is the safe default.
MIN_FILL_ROWS = 2


class ServingFlags(BaseModel):
    """The serving flags of one member, shared by ``caldrix pool --load``, ``caldrix run``
    and ``member.load``'s ``flags`` map."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    ctx: Annotated[int | None, Field(ge=1)] = None
    """The window in tokens; ``None`` is the model's training window, at most ``DEFAULT_CTX``."""
    threads: Annotated[int | None, Field(ge=1)] = None
    """CPU threads for the engine; ``None``: every CPU this process may run on, for a llama.cpp
    engine (:mod:`caldrix.engines.cpu_threads`), ctransformers' own choice for a legacy one."""
    batch: Annotated[int, Field(ge=1)] = DEFAULT_BATCH
    """Rows evaluated per batch during a prefill."""
    max_batch: int = 1
    """Concurrent streams per member. Only 1 (the single-stream loop) is served."""
    engine: Literal["auto", "llamacpp", "ctransformers", "scripted"] = "auto"
    """Which engine opens the file; ``auto`` picks by the file's magic. ``scripted`` is the test
    member (:mod:`caldrix.engines.scripted`): the file's real vocabulary, output from ``script``."""
    chat_template: str | None = None
    """A Jinja chat template, or a known name (``chatml``), for files that carry none."""
    model_type: str | None = None
    """The architecture of a legacy GGML file (``gpt2``, ``llama`` …), for ctransformers."""
    script: str | None = None
    """The ``scripted`` engine's script: a JSON file of completions, one per generation."""
    api_key_env: str | None = None
    """For a remote member (``openai+http(s)://…``): the environment variable holding the
    server's API key. Only the variable's name is a flag; the key itself is read when the
    member opens and is never logged, stored or reported."""
    script_prefill: bool = False
    """The ``scripted`` engine loads the weights too and computes every row with llama.cpp, so
    prefill, decode and the prefix store cost what the real model costs; the tokens chosen
    still come from ``script``."""
    flash_attention: bool = False
    """llama.cpp's flash attention: a long prefill is 1.2-1.4x faster on the CPU, and every batch,
    resumed tail and kept answer then holds at least ``FLASH_ATTENTION_EXACT_ROWS`` rows (the
    fewest it computes exactly), so each resume recomputes at least that many. Off by default:
    each decoded token is slower with it on a long context (0.84x at 4,000 rows)."""

    @field_validator("max_batch")
    @classmethod
    def _single_stream(cls, value: int) -> int:
        if value != 1:
            raise ValueError("only 1 (the single-stream loop) is served")
        return value

    @field_validator("flash_attention")
    @classmethod
    def _room_for_exact_batches(cls, value: bool, info: ValidationInfo) -> bool:
        # Two whole exact batches must fit in one: a prompt's last two batches are split so
        # that neither is shorter than FLASH_ATTENTION_EXACT_ROWS (batch_end).
        batch = info.data.get("batch", DEFAULT_BATCH)
        if value and batch < 2 * FLASH_ATTENTION_EXACT_ROWS:
            raise ValueError(f"needs --batch {2 * FLASH_ATTENTION_EXACT_ROWS} or more (it is {batch})")
        if value and info.data.get("engine") == "ctransformers":
            raise ValueError("only llama.cpp members have it, not ctransformers")
        return value


@dataclass(frozen=True)
class EngineCapabilities:
    """What an engine can do, declared rather than discovered by trial."""

    constraints: tuple[ConstraintKind, ...] = ALL_CONSTRAINTS
    snapshots: bool = False
    """Whether :meth:`Engine.save_rows` / :meth:`Engine.load_rows` work (the prefix store)."""
    lane: Literal["cpu", "gpu"] = "cpu"
    flash_attention: bool = False
    """Whether the engine computes with llama.cpp's flash attention (``--flash-attention``)."""
    min_fill_rows: int = MIN_FILL_ROWS
    """The fewest rows any batch computes where the prompt allows (the first batch, a resumed
    tail, a kept answer recomputed), so that the logits and the rows kept are what a whole
    prefill computes: 2 where a one-row batch takes another compute path (llama.cpp),
    ``FLASH_ATTENTION_EXACT_ROWS`` with flash attention, 1 where every batch computes what a
    longer one does (at least the prompt's last row is always computed: its logits are not part
    of the kept rows)."""


@dataclass(frozen=True)
class ChatTemplateSource:
    """The chat template an engine renders with: Jinja source plus its special texts."""

    source: str
    bos_token: str = ""
    eos_token: str = ""


@runtime_checkable
class ServedModel(Protocol):
    """What every member serves, local or remote: its window and capabilities, its chat
    template and its tokenizer, which is all a context needs to be rendered and counted."""

    capabilities: EngineCapabilities

    @property
    def n_ctx(self) -> int: ...

    @property
    def threads(self) -> int | None: ...

    @property
    def chat_template(self) -> ChatTemplateSource: ...

    @property
    def footprint_bytes(self) -> int | None:
        """Weights + KV for the window + compute buffers, when known."""
        ...

    def tokenize(self, text: str, *, special: bool = True) -> list[int]:
        """Token ids of ``text``, no BOS added. Thread-safe. With ``special`` (the default) the
        text of a special token such as ``<|im_end|>`` becomes that token; with
        ``special=False`` it is plain text like any other, which is how segment text is
        tokenized (:mod:`caldrix.generation._segment_tokens`)."""
        ...

    def close(self) -> None: ...


#: A snapshot of an engine's live rows, as :meth:`Engine.save_rows` gives it and
#: :meth:`Engine.load_rows` takes it back. An engine may fill a ``bytearray`` in place: a long
#: context's snapshot is hundreds of MB, and making ``bytes`` of it is one more copy.
RowsSnapshot: TypeAlias = bytes | bytearray


@runtime_checkable
class Engine(ServedModel, Protocol):
    """One loaded model with the KV rows of one sequence."""

    @property
    def n_vocab(self) -> int: ...

    @property
    def eos_token_ids(self) -> tuple[int, ...]:
        """Tokens that end a turn (end of generation)."""
        ...

    @property
    def live_tokens(self) -> Sequence[int]:
        """The token ids whose rows are in the KV right now, in order."""
        ...

    @property
    def prefill_batch(self) -> int:
        """Rows evaluated per batch during a prefill (``ServingFlags.batch``)."""
        ...

    def lltokenizer(self) -> LLTokenizer:
        """The llguidance tokenizer built from this model's own vocabulary (built once)."""
        ...

    def truncate(self, n_rows: int) -> None:
        """Keep only the first ``n_rows`` rows of the KV."""
        ...

    def evaluate(self, tokens: Sequence[int]) -> None:
        """Append rows for ``tokens`` after the live rows, batched; afterwards :meth:`logits`
        holds the next-token logits after the last of them."""
        ...

    def logits(self) -> npt.NDArray[np.float32]:
        """Next-token logits after the last evaluated row (a copy, shape ``(n_vocab,)``)."""
        ...

    def save_rows(self) -> RowsSnapshot:
        """A snapshot of the live rows (only with ``capabilities.snapshots``)."""
        ...

    def load_rows(self, data: RowsSnapshot, tokens: Sequence[int]) -> None:
        """Replace the live rows with a snapshot holding ``tokens``. The logits are stale
        afterwards: evaluate at least one more token before reading them."""
        ...


@runtime_checkable
class AbortsInBatch(Protocol):
    """An engine that can stop a batch while it computes (llama.cpp's abort callback): a
    cancelled prefill ends within one step of the model's graph, whatever the batch's size, so
    its batches need not be kept short for a cancel's sake."""

    def abort_when(self, check: Callable[[], bool] | None) -> None:
        """From now on, stop a batch as soon as ``check()`` is true (``None``: never); the stopped
        :meth:`Engine.evaluate` raises :class:`EvaluationAborted` and keeps none of its rows."""
        ...


class EvaluationAborted(Exception):
    """:meth:`Engine.evaluate` stopped by the check given to :meth:`AbortsInBatch.abort_when`;
    the live rows are those before the batch."""


@dataclass(frozen=True)
class GuardLimits:
    """What a generation's degeneration guard watches for (a ``generate``'s ``guard`` field;
    :mod:`caldrix.generation.degeneration`): a span of at most ``span_max_tokens`` repeated
    ``repeats`` times over at least ``run_min_tokens`` (or twice over ``long_run_tokens``); a
    string open for ``open_string_chars`` characters; ``similar_lines`` lines in a row that
    differ only in their numbers (any of the last three 0: not watched)."""

    span_max_tokens: int
    repeats: int
    run_min_tokens: int
    open_string_chars: int
    similar_lines: int = 0
    long_run_tokens: int = 0
    #: The letters a line needs to count toward ``similar_lines`` (not a protocol field).
    similar_line_letters: int = SIMILAR_LINE_MIN_LETTERS


@dataclass
class GenerationParams:
    """One generation's settings, as the ``generate`` op carries them."""

    max_new_tokens: int
    constraint: dict[str, object] | None = None
    temperature: float = 0.0
    seed: int | None = None
    stop: list[str] = field(default_factory=list)
    logprobs: int = 0
    top_k: int = 0
    """Sample only among the k most likely tokens; 0 = all."""
    top_p: float = 1.0
    """Sample only among the fewest tokens whose probabilities add up to p; 1 = all."""
    guard: GuardLimits | None = None
    """The degeneration guard; None: the generation runs to its other finishes."""


class GenerationSink(Protocol):
    """Where a running generation reports; implemented by the connection (frames) and by
    ``caldrix run`` (the terminal)."""

    def progress(self, done: int, total: int) -> None: ...

    def token(self, text: str) -> None: ...

    def cancelled(self) -> bool: ...


Finish = Literal["stop", "length", "constraint", "degenerate"]


@dataclass
class GenerationResult:
    """What a finished generation reports in its ``done`` frame."""

    text: str
    finish: Finish
    prompt_tokens: int
    completion_tokens: int
    recomputed_from: int
    output_token_ids: list[int]
    queue_ms: float = 0.0
    prefill_ms: float = 0.0
    decode_ms: float = 0.0
    logprobs: list[dict[str, object]] | None = None
    stop_string: str | None = None
    """The stop string that ended the text, when one did."""
    reason: str | None = None
    """Why the guard stopped a ``degenerate`` generation."""


class GenerationCancelled(Exception):
    """The sink asked to stop; ``partial`` holds what was generated until then. The engine's
    live rows stay valid (they are whatever was computed), so the next generation resumes."""

    def __init__(self, partial: GenerationResult) -> None:
        super().__init__("generation cancelled")
        self.partial = partial


class ResumePolicy(Protocol):
    """Decides where a generation's prefill starts. The default resumes from the live rows;
    the prefix store (:mod:`caldrix.store.prefix_store`) also restores stored snapshots."""

    def prepare(self, engine: Engine, prompt_tokens: Sequence[int]) -> int:
        """Leave ``engine.live_tokens == prompt_tokens[:k]`` with ``k < len(prompt_tokens)``
        and return ``k`` (the ``recomputed_from`` row)."""
        ...

    def remember(self, engine: Engine, prompt_len: int, *, prefill_ms: float | None = None) -> None:
        """Called after a generation, with the rows of prompt and output live. ``prefill_ms``
        is the time spent computing rows ``k..prompt_len`` (not restoring), for cost models."""
        ...


@runtime_checkable
class StreamingModel(ServedModel, Protocol):
    """A member whose generations run elsewhere, whole (a remote server): it is given the
    rendered prompt and streams the answer, with no rows, logits or snapshots of its own."""

    def stream_generation(
        self,
        prompt_tokens: Sequence[int],
        params: GenerationParams,
        sink: GenerationSink,
        *,
        prompt_text: str | None = None,
    ) -> GenerationResult:
        """Generate after ``prompt_tokens`` (rendered as ``prompt_text``), streaming text to
        ``sink``; raises :class:`GenerationCancelled` when the sink cancels."""
        ...

    def describe(self) -> dict[str, object]:
        """What the member object adds about where the model runs (its ``remote`` field)."""
        ...
