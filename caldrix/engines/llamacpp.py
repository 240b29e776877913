"""The GGUF engine: one llama.cpp model and the KV rows of sequence 0, over llama-cpp-python.

Only primitives live here (tokenize, evaluate, logits, truncate, snapshots); the generation
loop itself is :func:`caldrix.generation.decoding.run_generation`, shared with every engine.

Three things about llama.cpp shape this module:

- A build uses the x86 extensions it was compiled for, and dies of an illegal instruction on a
  CPU without them: :func:`open_llamacpp` refuses such a build (a venv copied from another
  machine) with one line before llama.cpp runs any CPU code
  (:func:`caldrix.engines._llama.refuse_foreign_build`).
- Its AMX matmul path (an "extra buffer type") crashes on some Xeon CPUs at the first
  evaluation. Every model is therefore loaded with extra buffer types off, the same as
  llama.cpp's ``--no-repack``: :func:`disable_extra_buffer_types` is called before each load
  (importing this module changes nothing).
- ``Llama.save_state()`` copies the whole logits buffer and ``Llama.detokenize`` drops tokens
  longer than 32 bytes, so snapshots use the per-sequence state API and text is decoded with
  the llguidance tokenizer built from the model's own vocabulary
  (:class:`caldrix.engines._llama.LlamaVocabulary`).
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import llama_cpp.llama_cpp as _llama_c
import numpy as np
import numpy.typing as npt
from llama_cpp import Llama
from llguidance import LLTokenizer

from caldrix.engine_seam import (
    MIN_FILL_ROWS,
    ChatTemplateSource,
    EngineCapabilities,
    EvaluationAborted,
    RowsSnapshot,
    ServingFlags,
)
from caldrix.engines._llama import LlamaVocabulary, LoadLog, refuse_foreign_build
from caldrix.engines.cpu_kernels import this_cpu_flags
from caldrix.engines.cpu_threads import engine_threads, usable_cpus
from caldrix.errors import ContextOverflow, InternalError, PrecheckFailed
from caldrix.limits import DEFAULT_CTX, FLASH_ATTENTION_EXACT_ROWS
from caldrix.models.files import native_path, open_model_file

#: The one sequence a member serves (``--max-batch 1``).
SEQ_ID = 0
#: Bytes per KV element: llama.cpp keeps K and V in f16 unless told otherwise.
KV_ELEMENT_BYTES = 2


def disable_extra_buffer_types() -> None:
    """Make every ``Llama`` built in this process from now on load with ``use_extra_bufts =
    False``. Called before each load here; code that builds a plain ``Llama`` itself (the
    benchmark's baseline) calls it too.

    ``Llama.__init__`` takes its model parameters from ``llama_model_default_params()`` and
    offers no keyword for this field, so the default itself is wrapped (once)."""
    current = _llama_c.llama_model_default_params
    if getattr(current, "_caldrix_no_extra_bufts", False):
        return

    def params_without_extra_bufts() -> Any:
        params = current()
        params.use_extra_bufts = False
        return params

    params_without_extra_bufts._caldrix_no_extra_bufts = True  # type: ignore[attr-defined]
    _llama_c.llama_model_default_params = params_without_extra_bufts


def open_llamacpp(
    path: Path,
    flags: ServingFlags,
    *,
    cpu_flags: Callable[[], frozenset[str] | None] = this_cpu_flags,
) -> LlamaCppEngine:
    """Load the GGUF file at ``path`` with ``flags``; errors are one line each.

    First the build is checked against this CPU's flags (``cpu_flags``, ``/proc/cpuinfo``'s;
    None skips the check): a build using extensions the CPU lacks is refused before it can
    crash the process. llama.cpp opens the file through the descriptor caldrix holds open, so
    the name cannot be swapped for a named pipe (whose open would never return) after it was
    checked."""
    refuse_foreign_build(cpu_flags())
    with open_model_file(path) as handle:
        native = native_path(handle, path)
        n_ctx = flags.ctx or DEFAULT_CTX
        llm, buffer_bytes = _load_llama(native, path.name, n_ctx, flags)
        n_ctx_train = int(_llama_c.llama_model_n_ctx_train(llm._model.model))
        if flags.ctx is None and 0 < n_ctx_train < n_ctx:
            # The default window is the smaller of DEFAULT_CTX and the training window; that is
            # only known once loaded, so a model trained on a shorter window is opened again
            # (the file is memory-mapped, so the second load is cheap).
            llm.close()
            llm, buffer_bytes = _load_llama(native, path.name, n_ctx_train, flags)
    return LlamaCppEngine(llm, flags, compute_bytes=buffer_bytes)


def _load_llama(native: str, name: str, n_ctx: int, flags: ServingFlags) -> tuple[Llama, int | None]:
    """The loaded model (the file at ``native``, named ``name`` to people) and the compute +
    output buffer bytes llama.cpp reported, if any."""
    disable_extra_buffer_types()
    threads = engine_threads(flags.threads, usable_cpus())
    with LoadLog() as log:
        try:
            llm = Llama(
                model_path=native,
                n_ctx=n_ctx,
                n_batch=flags.batch,
                n_ubatch=flags.batch,
                n_threads=threads,
                n_threads_batch=threads,
                flash_attn=flags.flash_attention,
                logits_all=False,
                verbose=False,
            )
        except (ValueError, RuntimeError) as exc:
            reason = log.last_error() or str(exc)
            raise PrecheckFailed(
                f"llama.cpp could not load {name}: {reason}; check that it is a complete GGUF model"
            ) from exc
    return llm, log.buffer_bytes()


class LlamaCppEngine:
    """A loaded GGUF model serving one sequence; see :class:`caldrix.engine_seam.Engine`."""

    def __init__(self, llm: Llama, flags: ServingFlags, compute_bytes: int | None = None) -> None:
        self.capabilities = EngineCapabilities(
            snapshots=True,
            lane="cpu",
            flash_attention=flags.flash_attention,
            min_fill_rows=FLASH_ATTENTION_EXACT_ROWS if flags.flash_attention else MIN_FILL_ROWS,
        )
        self._llm = llm
        #: What stops a batch while it computes (``abort_when``), and the callback llama.cpp
        #: calls with it: kept here, as ctypes needs the callback object alive while it is set.
        self._abort_check: Callable[[], bool] | None = None
        self._abort_callback = _llama_c.ggml_abort_callback(self._should_abort)
        self._compute_bytes = compute_bytes
        self._flags = flags
        self._vocabulary = LlamaVocabulary(llm._model.vocab)
        self._live: list[int] = []
        self._closed = False
        self._template = self._vocabulary.chat_template(
            flags.chat_template, llm.metadata.get("tokenizer.chat_template")
        )

    # -- properties -------------------------------------------------------------------

    @property
    def n_ctx(self) -> int:
        return int(self._llm.n_ctx())

    @property
    def n_vocab(self) -> int:
        return self._vocabulary.n_vocab

    @property
    def threads(self) -> int | None:
        return int(self._llm.context_params.n_threads)

    @property
    def prefill_batch(self) -> int:
        """Rows per prefill batch (``flags.batch``)."""
        return int(self._llm.n_batch)

    @property
    def chat_template(self) -> ChatTemplateSource:
        return self._template

    @property
    def eos_token_ids(self) -> tuple[int, ...]:
        return self._vocabulary.eos

    @property
    def live_tokens(self) -> Sequence[int]:
        return tuple(self._live)

    @property
    def footprint_bytes(self) -> int | None:
        """Weights + the KV of the whole window + the compute and output buffers (as llama.cpp
        reported them while loading, else estimated)."""
        model = self._llm._model.model
        weights = int(_llama_c.llama_model_size(model))
        compute = self._compute_bytes or self._compute_bytes_estimate()
        return weights + self._kv_bytes_for_window() + compute

    # -- tokens -------------------------------------------------------------------------

    def tokenize(self, text: str, *, special: bool = True) -> list[int]:
        return self._vocabulary.tokenize(text, special=special)

    def lltokenizer(self) -> LLTokenizer:
        return self._vocabulary.lltokenizer()

    # -- rows ---------------------------------------------------------------------------

    def truncate(self, n_rows: int) -> None:
        n_rows = max(0, min(n_rows, len(self._live)))
        memory = _llama_c.llama_get_memory(self._llm._ctx.ctx)
        if not _llama_c.llama_memory_seq_rm(memory, SEQ_ID, n_rows, -1):
            # Some memory kinds (recurrent models) cannot drop a tail: start over instead.
            _llama_c.llama_memory_seq_rm(memory, SEQ_ID, -1, -1)
            n_rows = 0
        self._llm.n_tokens = n_rows
        del self._live[n_rows:]

    def evaluate(self, tokens: Sequence[int]) -> None:
        if not tokens:
            return
        if len(self._live) + len(tokens) > self.n_ctx:
            raise ContextOverflow(
                f"{len(self._live) + len(tokens)} tokens do not fit the window of {self.n_ctx}"
            )
        self._llm.n_tokens = len(self._live)
        try:
            self._llm.eval(list(tokens))
        except RuntimeError as exc:
            # The KV may hold part of the batch now; forget it rather than guess.
            self.truncate(len(self._live))
            if self._should_abort(None):
                raise EvaluationAborted(f"{len(tokens)} rows stopped while computed") from exc
            raise InternalError(f"llama.cpp failed to evaluate {len(tokens)} tokens: {exc}") from exc
        self._live.extend(int(t) for t in tokens)

    def abort_when(self, check: Callable[[], bool] | None) -> None:
        """See :class:`caldrix.engine_seam.AbortsInBatch`. llama.cpp calls the check after each
        node of the model's graph (about 500 a batch), taking the GIL each time, so it is set
        only while a prefill runs, not for the one-row decode steps."""
        self._abort_check = check
        callback = self._abort_callback if check is not None else _llama_c.ggml_abort_callback()
        _llama_c.llama_set_abort_callback(self._llm._ctx.ctx, callback, None)

    def _should_abort(self, _data: object) -> bool:
        check = self._abort_check
        return check is not None and check()

    def logits(self) -> npt.NDArray[np.float32]:
        row = self._llm._ctx.get_logits_ith(-1)
        return np.ctypeslib.as_array(row, shape=(self.n_vocab,)).copy()

    def save_rows(self) -> RowsSnapshot:
        # llama.cpp writes straight into the bytearray that is kept: copying a ctypes array into
        # bytes afterwards was half a save's time (33 of 69 ms for 3,000 rows; a save waits in
        # front of the member's next generation).
        ctx = self._llm._ctx.ctx
        size = int(_llama_c.llama_state_seq_get_size(ctx, SEQ_ID))
        data = bytearray(size)
        buffer = (ctypes.c_uint8 * size).from_buffer(data)
        written = int(_llama_c.llama_state_seq_get_data(ctx, buffer, size, SEQ_ID))
        del buffer  # a bytearray with a live export cannot be shortened
        del data[written:]
        return data

    def load_rows(self, data: RowsSnapshot, tokens: Sequence[int]) -> None:
        self.truncate(0)
        # llama.cpp only reads the snapshot, so point it at the object's own buffer: copying
        # a 47 MB snapshot into a ctypes array first took 30 ms, the restore itself 3 ms.
        buffer: Any
        if isinstance(data, bytearray):
            buffer = (ctypes.c_uint8 * len(data)).from_buffer(data)
        else:
            buffer = ctypes.cast(ctypes.c_char_p(data), ctypes.POINTER(ctypes.c_uint8))
        if _llama_c.llama_state_seq_set_data(self._llm._ctx.ctx, buffer, len(data), SEQ_ID) == 0:
            raise InternalError("llama.cpp refused a stored KV snapshot (made by another model?)")
        token_list = [int(t) for t in tokens]
        self._llm.input_ids[: len(token_list)] = token_list
        self._llm.n_tokens = len(token_list)
        self._live = token_list

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._llm.close()

    # -- helpers ------------------------------------------------------------------------

    def _kv_bytes_for_window(self) -> int:
        model = self._llm._model.model
        n_layer = int(_llama_c.llama_model_n_layer(model))
        n_head = max(1, int(_llama_c.llama_model_n_head(model)))
        n_head_kv = int(_llama_c.llama_model_n_head_kv(model))
        head_dim = int(_llama_c.llama_model_n_embd(model)) // n_head
        per_token = n_layer * n_head_kv * head_dim * 2 * KV_ELEMENT_BYTES  # K and V
        return per_token * self.n_ctx

    def _compute_bytes_estimate(self) -> int:
        # Used only when the load log named no buffer sizes. The compute graph is reserved for
        # one full batch; its largest tensors are the batch's vocabulary-wide logits and one
        # layer's attention scores over the window.
        model = self._llm._model.model
        batch = int(self._llm.n_batch)
        logits = self.n_vocab * 4 * batch
        attention_scores = batch * self.n_ctx * 4 * max(1, int(_llama_c.llama_model_n_head(model)))
        return max(logits, attention_scores) + logits // 2
