"""What both llama.cpp engines share: a model's vocabulary, the log taken while a file loads,
and the check that this llama.cpp build can run on this CPU at all.

The llama.cpp engine (:mod:`caldrix.engines.llamacpp`) loads a whole model; the scripted engine
(:mod:`caldrix.engines.scripted`) loads only the vocabulary of the same kind of file. Both
tokenize, build the llguidance tokenizer, find the end-of-generation tokens and resolve the chat
template the same way, here, and both refuse a build made for another CPU before llama.cpp runs
any of its CPU code (:func:`refuse_foreign_build`).
"""

from __future__ import annotations

import ctypes
import functools
import re
import threading
import warnings
from typing import Any

import llama_cpp.llama_cpp as _llama_c
from llama_cpp import _logger
from llguidance import LLTokenizer
from llguidance.llamacpp import lltokenizer_from_vocab

from caldrix.engine_seam import ChatTemplateSource
from caldrix.engines.cpu_kernels import build_features_of, missing_for_build
from caldrix.errors import InternalError, PrecheckFailed
from caldrix.generation.templates import template_source_for

#: ggml's level for errors in its log callback.
GGML_LOG_LEVEL_ERROR = 3
#: How to get a build this CPU runs, after the names of what the installed one needs.
REBUILD_ADVICE = (
    "rebuild it here: scripts/setup, or pip install --force-reinstall --no-deps --no-cache-dir "
    "llama-cpp-python==0.3.36 with CMAKE_ARGS from docs/engine.md"
)


@functools.cache
def built_cpu_features() -> frozenset[str]:
    """The x86 extensions this llama.cpp build was compiled with (``AVX2``, ``AVX512``, ...),
    read without running any of its CPU code (:func:`build_features_of`)."""
    return build_features_of(_llama_c._lib)


def refuse_foreign_build(cpu_flags: frozenset[str] | None) -> None:
    """Raise :class:`PrecheckFailed`, in one line, when this llama.cpp build uses x86
    extensions a CPU with ``cpu_flags`` (``/proc/cpuinfo``'s) lacks: a venv copied from another
    machine would otherwise die of an illegal instruction on its first model load. ``None``
    (flags unknown, not Linux) checks nothing."""
    if cpu_flags is None:
        return
    missing = missing_for_build(built_cpu_features(), cpu_flags)
    if missing:
        raise PrecheckFailed(
            f"this llama.cpp build uses {', '.join(missing)}, which this CPU lacks "
            f"(a venv copied from another machine?); {REBUILD_ADVICE}"
        )


class LlamaVocabulary:
    """The vocabulary of a loaded llama.cpp model (its ``llama_vocab *``)."""

    def __init__(self, vocab: Any) -> None:
        self.pointer = vocab
        self.n_vocab = int(_llama_c.llama_vocab_n_tokens(vocab))
        self.eos = tuple(t for t in range(self.n_vocab) if _llama_c.llama_vocab_is_eog(vocab, t))
        self._lltokenizer: LLTokenizer | None = None
        self._lltokenizer_lock = threading.Lock()

    def tokenize(self, text: str, *, special: bool = True) -> list[int]:
        """Token ids of ``text``, special tokens parsed unless ``special`` is False, no BOS.
        Thread-safe: llama.cpp's tokenizer only reads the vocabulary, and each call has its
        own buffer."""
        data = text.encode("utf-8")
        capacity = len(data) + 8
        buffer = (_llama_c.llama_token * capacity)()
        n = _llama_c.llama_tokenize(self.pointer, data, len(data), buffer, capacity, False, special)
        if n < 0:  # never expected (a token holds at least one byte), but the API allows it
            capacity = -n
            buffer = (_llama_c.llama_token * capacity)()
            n = _llama_c.llama_tokenize(self.pointer, data, len(data), buffer, capacity, False, special)
        if n < 0:
            raise InternalError(f"llama.cpp could not tokenize a text of {len(data)} bytes")
        return list(buffer[:n])

    def lltokenizer(self) -> LLTokenizer:
        """The llguidance tokenizer of this vocabulary, built once."""
        with self._lltokenizer_lock:
            if self._lltokenizer is None:
                # llguidance reads token attributes through a function llama-cpp-python marks
                # deprecated, which would warn once per token (49,152 times for SmolLM2).
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", DeprecationWarning)
                    self._lltokenizer = lltokenizer_from_vocab(self.pointer, eos_token=list(self.eos))
            return self._lltokenizer

    def is_control(self, token: int) -> bool:
        return bool(_llama_c.llama_vocab_get_attr(self.pointer, token) & _llama_c.LLAMA_TOKEN_ATTR_CONTROL)

    def token_text(self, token: int) -> str:
        if token < 0:
            return ""
        text = _llama_c.llama_vocab_get_text(self.pointer, token)
        return text.decode("utf-8", "replace") if text else ""

    def chat_template(self, flag: str | None, embedded: str | None) -> ChatTemplateSource:
        """The template to render with (``--chat-template``, else the file's own, else ChatML),
        with this vocabulary's BOS and EOS texts."""
        source = template_source_for(flag, embedded)
        bos = self.token_text(_llama_c.llama_vocab_bos(self.pointer))
        if _llama_c.llama_vocab_get_add_bos(self.pointer) and bos and "bos_token" not in source:
            # The model expects BOS first but its template never writes it: add it here, so
            # the rendered text (tokenized with special tokens parsed) starts with it.
            source = "{{ bos_token }}" + source
        eos = self.token_text(_llama_c.llama_vocab_eos(self.pointer))
        return ChatTemplateSource(source=source, bos_token=bos, eos_token=eos)


class LoadLog:
    """Takes llama.cpp's log while a model loads: nothing reaches stderr, and the compute and
    output buffer sizes (which the C API does not expose) are read from it for the footprint.

    llama.cpp has one process-wide log callback, so loads are serialised while it is swapped."""

    _lock = threading.Lock()
    _BUFFER_LINE = re.compile(r"(?:compute|output) buffer size\s*=\s*([0-9.]+) MiB")

    def __init__(self) -> None:
        self._lines: list[tuple[int, str]] = []
        self._callback = _llama_c.llama_log_callback(self._on_log)

    def _on_log(self, level: int, text: bytes | None, _user_data: Any) -> None:
        if text:
            self._lines.append((level, text.decode("utf-8", "replace")))

    def __enter__(self) -> LoadLog:
        self._lock.acquire()
        _llama_c.llama_log_set(self._callback, ctypes.c_void_p(0))
        return self

    def __exit__(self, *exc_info: object) -> None:
        _llama_c.llama_log_set(_logger.llama_log_callback, ctypes.c_void_p(0))
        self._lock.release()

    def buffer_bytes(self) -> int | None:
        sizes = [float(m.group(1)) for _, line in self._lines if (m := self._BUFFER_LINE.search(line))]
        return int(sum(sizes) * 1024 * 1024) if sizes else None

    def last_error(self) -> str | None:
        errors = [line.strip() for level, line in self._lines if level == GGML_LOG_LEVEL_ERROR]
        return errors[-1] if errors else None
