"""The legacy GGML engine: one model file from before GGUF, served through ctransformers.

ctransformers 0.2.27 bundles ggml's old example loaders (gpt2, gptj, gpt_neox, mpt, replit,
starcoder, dollyv2, falcon and llama ggjt). It cannot load current GGUF files and has no KV
snapshot API, so this engine declares ``snapshots=False``: the only rows it can reuse are the
live ones. That is enough for resuming: ggml's loaders write each evaluated row at position
``n_past`` of a fixed KV buffer, so evaluating with a smaller ``n_past`` overwrites the tail —
truncating the context is just remembering fewer live tokens.

The module talks to ctransformers' C functions directly (``ctransformers_llm_batch_eval``
with an explicit ``n_past``, ``ctransformers_llm_logits_data`` …) rather than through its
``LLM`` class, whose ``eval`` keeps its own idea of the past tokens.
"""

from __future__ import annotations

import ctypes
import functools
import re
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import numpy.typing as npt
from ctransformers.llm import ConfigStruct, load_library
from llguidance import LLTokenizer, TokenizerWrapper

from caldrix.engine_seam import (
    ALL_CONSTRAINTS,
    ChatTemplateSource,
    EngineCapabilities,
    RowsSnapshot,
    ServingFlags,
)
from caldrix.engines._native_stderr import native_stderr_captured
from caldrix.errors import ContextOverflow, InternalError, PrecheckFailed
from caldrix.generation.templates import template_source_for
from caldrix.limits import DEFAULT_CTX
from caldrix.models.files import native_path, open_model_file
from caldrix.models.ggml_bounds import LegacyHeaderInvalid
from caldrix.models.ggml_header import (
    GGUF_MAGIC,
    LEGACY_MAGICS,
    UNRECORDED_WINDOW,
    GgmlHeader,
    header_for_type,
    read_header,
    read_magic,
)
from caldrix.models.ggml_tensors import missing_tensor_bytes

#: The architectures ctransformers can open from a legacy GGML file (``--model-type``).
MODEL_TYPES = ("gpt2", "gptj", "gpt_neox", "dollyv2", "mpt", "replit", "starcoder", "falcon", "llama")
#: Architectures whose learned position table has exactly the file's window: ctransformers
#: must not be given another ``context_length`` (the table would not match), so a smaller
#: window is enforced here instead.
FIXED_WINDOW_TYPES = frozenset({"gpt2", "starcoder"})
#: Vocabulary entries that act as control tokens: ``<|endoftext|>``, ``<|im_end|>`` …
SPECIAL_TOKEN_PATTERN = re.compile(rb"<\|[A-Za-z0-9_]+\|>")
#: ChatML's end of turn: a stop token too, when the vocabulary holds it as one token.
CHATML_END_OF_TURN = b"<|im_end|>"

#: ggml's example loaders evaluate in one static scratch buffer per architecture, shared by
#: every model of that architecture in the process: evaluations must never overlap.
_EVAL_LOCK = threading.Lock()


def open_ctransformers(path: Path, flags: ServingFlags) -> CtransformersEngine:
    """Load the legacy GGML file at ``path`` with ``flags``; errors are one line each.

    The file is opened once: the header and tensor checks read that open file, and the native
    loader opens it again through its descriptor, so the name cannot be swapped for a named
    pipe or another file between the checks and the load."""
    with open_model_file(path) as handle:
        try:
            header, model_type = _checked_header(handle, path.name, flags.model_type)
            missing = missing_tensor_bytes(handle, header)
        except LegacyHeaderInvalid as exc:
            raise PrecheckFailed(f"{path.name} is not a usable legacy GGML file: {exc}") from None
        if missing:
            raise PrecheckFailed(
                f"{path.name} ends {missing} bytes before its last tensor; the file is incomplete "
                "(download it again)"
            )
        lib = _load_library()
        native = _create(
            lib, native_path(handle, path), path.name, model_type, _context_length(model_type, header, flags)
        )
    return CtransformersEngine(lib, native, path, model_type, header, flags)


def _checked_header(handle: BinaryIO, name: str, model_type: str | None) -> tuple[GgmlHeader, str]:
    """The open file's header and its architecture: ``model_type`` checked against the
    layout, or detected from the header when not given."""
    magic = read_magic(handle)
    if magic == GGUF_MAGIC:
        raise PrecheckFailed(
            f"{name} is a GGUF file; ctransformers only opens legacy GGML files "
            "(use --engine llamacpp or auto)"
        )
    if magic not in LEGACY_MAGICS:
        raise PrecheckFailed(f"{name} is not a legacy GGML model file (unknown magic {magic:#010x})")
    if model_type is None:
        header = read_header(handle)
        if header.model_type is None:
            raise PrecheckFailed(
                f"cannot tell the architecture of {name} from its header; "
                f"pass --model-type (one of {', '.join(MODEL_TYPES)})"
            )
        return header, header.model_type
    canonical = _canonical_model_type(model_type)
    if canonical is None:
        raise PrecheckFailed(f"unknown model type {model_type!r}; use one of {', '.join(MODEL_TYPES)}")
    checked = header_for_type(handle, canonical)
    if checked is None:
        raise PrecheckFailed(
            f"{name} does not have the layout of a {canonical} GGML file; "
            "check --model-type (or leave it out to detect it)"
        )
    return checked, canonical


def _context_length(model_type: str, header: GgmlHeader, flags: ServingFlags) -> int:
    """The ``context_length`` to create the model with; -1 keeps the file's own."""
    if model_type in FIXED_WINDOW_TYPES:
        return -1
    if flags.ctx is not None:
        return flags.ctx
    return min(header.n_ctx, DEFAULT_CTX) if header.n_ctx else UNRECORDED_WINDOW


def _canonical_model_type(name: str) -> str | None:
    """The :data:`MODEL_TYPES` entry ``name`` spells, ignoring case and punctuation the way
    ctransformers does (``gpt-neox`` is ``gpt_neox``); ``gpt_bigcode`` is ``starcoder``."""

    def squeeze(text: str) -> str:
        return "".join(c for c in text.lower() if c.isalnum())

    wanted = squeeze(name)
    if wanted == "gptbigcode":
        return "starcoder"
    return next((known for known in MODEL_TYPES if squeeze(known) == wanted), None)


@functools.cache
def _load_library() -> Any:
    """ctransformers' prebuilt library for this CPU, with its C signatures declared. Loaded
    once: choosing the build probes the CPU through py-cpuinfo, which takes about a second."""
    try:
        return load_library(None, gpu=False)
    except OSError as exc:
        raise PrecheckFailed(f"ctransformers has no library for this machine: {exc}") from exc


def _create(lib: Any, native: str, name: str, model_type: str, context_length: int) -> int:
    """ctransformers' model handle for the file at ``native`` (named ``name`` to people)."""
    config = ConfigStruct(context_length=context_length, gpu_layers=0, mmap=True, mlock=False)
    # ggml's loaders print their own complaint before failing; caldrix's line below says it.
    with native_stderr_captured(f"ctransformers loading {name}"):
        handle = lib.ctransformers_llm_create(native.encode(), model_type.encode(), config)
    if not handle:
        raise PrecheckFailed(
            f"ctransformers could not load {name} as a {model_type} GGML file; "
            "check --model-type and that the file is complete"
        )
    return int(handle)


class CtransformersEngine:
    """A loaded legacy GGML model serving one sequence; see :class:`caldrix.engine_seam.Engine`."""

    # ggml's old loaders compute a one-row batch the way they compute a longer one: how the
    # rows are split into batches moves a logit by float rounding only (~1e-6 on the tiny test
    # model, the same for one-row batches as for longer ones), and the last prompt row computed
    # alone after the rest gives the prefill's logits exactly. So a resume recomputes only that
    # row, and an unchanged prompt costs one row: llama.cpp's rule of two buys nothing here.
    capabilities = EngineCapabilities(
        constraints=ALL_CONSTRAINTS, snapshots=False, lane="cpu", min_fill_rows=1
    )

    def __init__(
        self,
        lib: Any,
        handle: int,
        path: Path,
        model_type: str,
        header: GgmlHeader,
        flags: ServingFlags,
    ) -> None:
        self._lib = lib
        self._handle: int | None = handle
        self._path = path
        self.model_type = model_type
        self._header = header
        self._flags = flags
        self._live: list[int] = []
        self._logits_fresh = False
        self._tokenize_lock = threading.Lock()
        self._lltokenizer: LLTokenizer | None = None
        self._lltokenizer_lock = threading.Lock()
        self._n_vocab = int(lib.ctransformers_llm_vocab_size(handle))
        file_window = int(lib.ctransformers_llm_context_length(handle))
        self._n_ctx = min(file_window, flags.ctx or DEFAULT_CTX)
        self._vocab = [self._token_bytes(t) for t in range(self._n_vocab)]
        self._specials = {
            token: t for t, token in enumerate(self._vocab) if SPECIAL_TOKEN_PATTERN.fullmatch(token)
        }
        self._eos = int(lib.ctransformers_llm_eos_token_id(handle))
        self._template = self._resolve_template()

    # -- properties -------------------------------------------------------------------

    @property
    def n_ctx(self) -> int:
        return self._n_ctx

    @property
    def n_vocab(self) -> int:
        return self._n_vocab

    @property
    def threads(self) -> int | None:
        return self._flags.threads

    @property
    def prefill_batch(self) -> int:
        """Rows per prefill batch (``flags.batch``)."""
        return self._flags.batch

    @property
    def chat_template(self) -> ChatTemplateSource:
        return self._template

    @property
    def eos_token_ids(self) -> tuple[int, ...]:
        ids = [self._eos]
        end_of_turn = self._specials.get(CHATML_END_OF_TURN)
        if end_of_turn is not None and "<|im_end|>" in self._template.source:
            ids.append(end_of_turn)
        return tuple(dict.fromkeys(ids))

    @property
    def live_tokens(self) -> Sequence[int]:
        return tuple(self._live)

    @property
    def footprint_bytes(self) -> int | None:
        """The file (the weights) plus the KV buffer of the loaded window, when the header
        gives its shape; ctransformers reports neither, and its scratch buffers not at all."""
        header = self._header
        if header.n_layer is None or header.n_embd is None:
            return None
        window = int(self._lib.ctransformers_llm_context_length(self._live_handle()))
        kv_width = header.n_embd * (header.kv_heads or 1) // (header.n_head or 1)
        kv = 2 * header.n_layer * window * kv_width * header.kv_element_bytes
        return self._path.stat().st_size + kv

    # -- tokens -------------------------------------------------------------------------

    def tokenize(self, text: str, *, special: bool = True) -> list[int]:
        """Token ids of ``text``: control tokens such as ``<|endoftext|>`` parsed (unless
        ``special`` is False: then none is), the rest through the model's own tokenizer, no
        BOS. Thread-safe."""
        if not special or not self._specials:
            return self._tokenize_plain(text)
        pattern = b"|".join(re.escape(token) for token in self._specials)
        ids: list[int] = []
        position = 0
        data = text.encode("utf-8")
        for match in re.finditer(pattern, data):
            ids += self._tokenize_plain(data[position : match.start()].decode("utf-8"))
            ids.append(self._specials[match.group()])
            position = match.end()
        ids += self._tokenize_plain(data[position:].decode("utf-8"))
        return ids

    def lltokenizer(self) -> LLTokenizer:
        with self._lltokenizer_lock:
            if self._lltokenizer is None:
                self._lltokenizer = self._build_lltokenizer()
            return self._lltokenizer

    # -- rows ---------------------------------------------------------------------------

    def truncate(self, n_rows: int) -> None:
        n_rows = max(0, min(n_rows, len(self._live)))
        if n_rows < len(self._live):
            # The rows past n_rows stay in ggml's buffer until overwritten; they are never
            # attended to again because every evaluation passes n_past explicitly.
            del self._live[n_rows:]
            self._logits_fresh = False

    def evaluate(self, tokens: Sequence[int]) -> None:
        if not tokens:
            return
        if len(self._live) + len(tokens) > self._n_ctx:
            # ctransformers would silently slide n_past back to make room: refuse instead.
            raise ContextOverflow(
                f"{len(self._live) + len(tokens)} tokens do not fit the window of {self._n_ctx}"
            )
        batch = (ctypes.c_int * len(tokens))(*tokens)
        threads = self._flags.threads if self._flags.threads is not None else -1
        with _EVAL_LOCK:
            ok = self._lib.ctransformers_llm_batch_eval(
                self._live_handle(), batch, len(tokens), len(self._live), self._flags.batch, threads
            )
        if not ok:
            self._logits_fresh = False
            raise InternalError(f"ctransformers failed to evaluate {len(tokens)} tokens")
        self._live.extend(int(t) for t in tokens)
        self._logits_fresh = True

    def logits(self) -> npt.NDArray[np.float32]:
        if not self._logits_fresh:
            raise InternalError("no logits: the rows changed since the last evaluation")
        handle = self._live_handle()
        size = int(self._lib.ctransformers_llm_logits_size(handle))
        data = self._lib.ctransformers_llm_logits_data(handle)
        if size < self._n_vocab or not data:
            raise InternalError(f"ctransformers returned {size} logits for {self._n_vocab} tokens")
        # Some loaders keep a row per evaluated token; the last row is the next token's.
        row = np.ctypeslib.as_array(data, shape=(size,))[size - self._n_vocab :]
        return row.astype(np.float32, copy=True)

    def save_rows(self) -> RowsSnapshot:
        raise InternalError("the ctransformers engine keeps no KV snapshots (live rows only)")

    def load_rows(self, data: RowsSnapshot, tokens: Sequence[int]) -> None:
        raise InternalError("the ctransformers engine keeps no KV snapshots (live rows only)")

    def close(self) -> None:
        with _EVAL_LOCK:
            if self._handle is not None:
                handle, self._handle = self._handle, None
                self._lib.ctransformers_llm_delete(handle)

    # -- helpers ------------------------------------------------------------------------

    def _live_handle(self) -> int:
        if self._handle is None:
            raise InternalError("this ctransformers engine is closed")
        return self._handle

    def _token_bytes(self, token: int) -> bytes:
        # ctransformers returns token text as a NUL-terminated C string, so a token holding a
        # NUL byte (in practice only the single byte 0) reads shorter; see docs/engines.md.
        raw = self._lib.ctransformers_llm_detokenize(self._live_handle(), token)
        return bytes(raw or b"")

    def _tokenize_plain(self, text: str) -> list[int]:
        """The model's own tokenizer, with no control-token parsing. ctransformers takes a C
        string, and its vocabulary reads back through C strings too, so no token can hold a
        NUL: NUL characters are left out."""
        text = text.replace("\0", "")
        if not text:
            return []
        data = text.encode("utf-8")
        capacity = len(data) + 2  # each token covers at least one byte; +1 for a BOS
        output = (ctypes.c_int * capacity)()
        with self._tokenize_lock:
            n = int(self._lib.ctransformers_llm_tokenize(self._live_handle(), data, False, output))
        return list(output[:n])

    def _build_lltokenizer(self) -> LLTokenizer:
        engine = self

        class _Vocabulary:
            """What :class:`llguidance.TokenizerWrapper` reads: token bytes by id, the EOS
            and control tokens, and a tokenize callback."""

            tokens = engine._vocab
            eos_token_id = engine._eos
            bos_token_id = None
            special_token_ids = sorted(engine._specials.values())

            def __call__(self, text: str | bytes) -> list[int]:
                if isinstance(text, bytes):
                    text = text.decode("utf-8", errors="replace")
                return engine._tokenize_plain(text)

        wrapper = TokenizerWrapper(_Vocabulary())
        return LLTokenizer(wrapper, eos_token=list(self.eos_token_ids))

    def _resolve_template(self) -> ChatTemplateSource:
        source = template_source_for(self._flags.chat_template, None)
        bos = int(self._lib.ctransformers_llm_bos_token_id(self._live_handle()))
        return ChatTemplateSource(
            source=source, bos_token=self._token_text(bos), eos_token=self._token_text(self._eos)
        )

    def _token_text(self, token: int) -> str:
        if not 0 <= token < self._n_vocab:
            return ""
        return self._vocab[token].decode("utf-8", errors="replace")
