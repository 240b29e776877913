"""The scripted engine: a test member that answers from a script, through the real machinery.

It loads only the vocabulary of a real GGUF file (llama.cpp's ``vocab_only``: no weights, no
KV), so tokenizing, the chat template, llguidance's constraint masks, the daemon, the protocol
and the decoding loop (:func:`caldrix.generation.decoding.run_generation`) are all the real ones. Only
:meth:`ScriptedEngine.logits` is made up: it steers each generation toward the next completion
of the script.

The script is a JSON file, either a list of completions (strings) or
``{"completions": [...], "constraints": ["one_of", ...]}``; ``constraints`` declares which
constraint kinds this member claims to support (default: all), so a test can stand up a member
without the ``json`` constraint. Each generation takes the next completion, in order, whatever
context it runs on; when the script has run out, a generation ends at once with EOS. A
completion may also be ``{"text": "...", "when": "..."}``: it is taken only by a generation whose
prompt holds the ``when`` text, so agents that run concurrently on one member (and reach it in
an order the script cannot know) each get their own answers. A generation takes the first
unused completion it matches; a plain string matches every prompt.

Steering: the logits favour the longest vocabulary token that continues the completion's text
from where the output has got to, then shorter ones, then EOS once the text is complete. The
constraint's mask is applied after, so when a completion breaks the constraint, the constraint
wins: the best allowed token is taken instead. Output the mask forced on the engine (a JSON
object's ``{"thought": "`` say) is looked up further on in the completion, and steering resumes
after it. When nothing of the completion is allowed, the engine leans toward EOS, then toward
closing what is open (``"``, ``}``, ``]``), so a derailed generation still ends.

Only the live rows are kept (``capabilities.snapshots`` is False): there are no rows to store,
since nothing is computed. With ``script_prefill`` the member loads the model's weights as well
and every row goes through llama.cpp (:class:`caldrix.engines.llamacpp.LlamaCppEngine`): prefill
and decode cost what the real model costs and the prefix store keeps real snapshots, while the
tokens chosen still come from the script. Benchmarks and tests of the prefix store's use by an
agent run use it: the answers are fixed, the work of computing the rows is the model's own.
"""

from __future__ import annotations

import ctypes
import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import llama_cpp.llama_cpp as _llama_c
import numpy as np
import numpy.typing as npt
from llguidance import LLTokenizer

from caldrix.engine_seam import (
    ALL_CONSTRAINTS,
    ChatTemplateSource,
    ConstraintKind,
    EngineCapabilities,
    RowsSnapshot,
    ServingFlags,
)
from caldrix.engines._llama import LlamaVocabulary, LoadLog, refuse_foreign_build
from caldrix.engines.cpu_kernels import this_cpu_flags
from caldrix.engines.llamacpp import LlamaCppEngine, open_llamacpp
from caldrix.errors import (
    BadRequest,
    ContextOverflow,
    InternalError,
    ModelNotFound,
    PrecheckFailed,
    ScriptError,
)
from caldrix.generation.templates import render_context
from caldrix.limits import DEFAULT_BATCH
from caldrix.models.fit import window_for
from caldrix.models.gguf import precheck

#: The logit of the token that continues the completion best is this plus its length in bytes.
STEER_LOGIT = 1000.0
#: EOS once the completion is complete.
END_LOGIT = 2000.0
#: With no direction from the completion: end if allowed, else close what is open.
FALLBACK_LOGITS: tuple[tuple[bytes, float], ...] = ((b'"', 40.0), (b"}", 30.0), (b"]", 20.0))
FALLBACK_EOS_LOGIT = 50.0
#: A token the constraint chose is looked up further on in the completion only when it holds at
#: least this many bytes besides spaces.
MIN_RESYNC_BYTES = 2
#: Longest token text looked up when steering (SmolLM2's longest token is 162 bytes).
MAX_TOKEN_BYTES = 256


@dataclass(frozen=True)
class Completion:
    """One answer of the script; ``when``: the text a prompt must hold to take it."""

    text: str
    when: str | None = None


@dataclass(frozen=True)
class Script:
    """The completions, in the order generations take them, and the constraints claimed."""

    completions: tuple[Completion, ...]
    constraints: tuple[ConstraintKind, ...] = ALL_CONSTRAINTS

    @classmethod
    def load(cls, path: Path) -> Script:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError as exc:
            raise ScriptError(f"no script file at {path}; --script takes a JSON file of completions") from exc
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ScriptError(f"cannot read the script {path}: {exc}") from exc
        return cls.parse(data, path)

    @classmethod
    def parse(cls, data: Any, path: Path) -> Script:
        constraints: Any = list(ALL_CONSTRAINTS)
        if isinstance(data, dict):
            constraints = data.get("constraints", constraints)
            data = data.get("completions")
        completions = [_completion(item) for item in data] if isinstance(data, list) else [None]
        if any(completion is None for completion in completions):
            raise ScriptError(
                f"the script {path} must be a JSON list of strings, or an object with 'completions' "
                '(a list of strings or {"text", "when"} objects) and optionally \'constraints\''
            )
        if not isinstance(constraints, list) or any(kind not in ALL_CONSTRAINTS for kind in constraints):
            kinds = ", ".join(ALL_CONSTRAINTS)
            raise ScriptError(f"the script {path}: 'constraints' must list some of {kinds}")
        return cls(tuple(c for c in completions if c is not None), tuple(constraints))


def _completion(item: Any) -> Completion | None:
    if isinstance(item, str):
        return Completion(item)
    if isinstance(item, dict) and isinstance(item.get("text"), str) and isinstance(item.get("when"), str):
        return Completion(item["text"], item["when"])
    return None


def open_scripted(path: Path, flags: ServingFlags) -> ScriptedEngine:
    """The vocabulary of the GGUF file at ``path``, answering from ``flags.script``; with
    ``flags.script_prefill`` its weights too, computing every row."""
    if not flags.script:
        raise BadRequest("--engine scripted needs --script FILE (a JSON list of completions)")
    script = Script.load(Path(flags.script))
    if not path.is_file():
        raise ModelNotFound(f"no model file at {path}")
    vocabulary = _VocabularyFile.load(path, flags.chat_template)
    if flags.script_prefill:
        rows = open_llamacpp(path, flags)
        return ScriptedEngine(vocabulary, script, rows.n_ctx, rows)
    n_ctx = window_for(precheck(path), flags.ctx)
    return ScriptedEngine(vocabulary, script, n_ctx)


class _VocabularyFile:
    """A GGUF file's vocabulary and chat template, loaded without its weights."""

    def __init__(self, model: Any, vocabulary: LlamaVocabulary, template: ChatTemplateSource) -> None:
        self._model = model
        self.vocabulary = vocabulary
        self.template = template

    @classmethod
    def load(cls, path: Path, chat_template: str | None) -> _VocabularyFile:
        # Even a vocabulary-only load registers ggml's CPU backend, which runs its CPU code.
        refuse_foreign_build(this_cpu_flags())
        params = _llama_c.llama_model_default_params()
        params.vocab_only = True
        params.use_extra_bufts = False
        with LoadLog() as log:
            model = _llama_c.llama_model_load_from_file(str(path).encode(), params)
            if not model:
                reason = log.last_error() or "unknown error"
                raise PrecheckFailed(f"llama.cpp could not read the vocabulary of {path.name}: {reason}")
        vocabulary = LlamaVocabulary(_llama_c.llama_model_get_vocab(model))
        template = vocabulary.chat_template(chat_template, _meta_text(model, "tokenizer.chat_template"))
        return cls(model, vocabulary, template)

    def close(self) -> None:
        if self._model:
            _llama_c.llama_model_free(self._model)
            self._model = None


def _meta_text(model: Any, key: str) -> str | None:
    size = 1 << 16
    buffer = ctypes.create_string_buffer(size)
    n = _llama_c.llama_model_meta_val_str(model, key.encode(), buffer, size)
    if n < 0:
        return None
    if n >= size:
        buffer = ctypes.create_string_buffer(n + 1)
        _llama_c.llama_model_meta_val_str(model, key.encode(), buffer, n + 1)
    return buffer.value.decode("utf-8", "replace")


class ScriptedEngine:
    """See the module docstring; an :class:`caldrix.engine_seam.Engine`. ``rows``: the real
    engine that computes the rows (``script_prefill``); None keeps token ids only."""

    def __init__(
        self, file: _VocabularyFile, script: Script, n_ctx: int, rows: LlamaCppEngine | None = None
    ) -> None:
        constraints = script.constraints
        own = EngineCapabilities(constraints=constraints, snapshots=False, lane="cpu")
        self.capabilities = own if rows is None else replace(rows.capabilities, constraints=constraints)
        self._rows = rows
        self._file = file
        self._vocabulary = file.vocabulary
        self._script = script
        self._n_ctx = n_ctx
        self._live: list[int] = []
        self._used: set[int] = set()
        self._target: bytes | None = None  # this generation's completion, once it has begun
        self._output_start = 0
        self._texts: list[bytes] | None = None
        self._by_text: dict[bytes, int] = {}
        self._generation_prompt = render_context(self, [{"role": "user", "text": "x"}]).generation_prompt

    # -- properties -------------------------------------------------------------------

    @property
    def prefill_batch(self) -> int:
        return DEFAULT_BATCH

    @property
    def n_ctx(self) -> int:
        return self._n_ctx

    @property
    def n_vocab(self) -> int:
        return self._vocabulary.n_vocab

    @property
    def threads(self) -> int | None:
        return self._rows.threads if self._rows is not None else None

    @property
    def chat_template(self) -> ChatTemplateSource:
        return self._file.template

    @property
    def eos_token_ids(self) -> tuple[int, ...]:
        return self._vocabulary.eos

    @property
    def live_tokens(self) -> Sequence[int]:
        return self._rows.live_tokens if self._rows is not None else tuple(self._live)

    @property
    def footprint_bytes(self) -> int | None:
        if self._rows is not None:
            return self._rows.footprint_bytes
        return None  # the fit's estimate from the file stands (it over-counts: no weights here)

    # -- tokens and rows ------------------------------------------------------------------

    def tokenize(self, text: str, *, special: bool = True) -> list[int]:
        return self._vocabulary.tokenize(text, special=special)

    def lltokenizer(self) -> LLTokenizer:
        return self._vocabulary.lltokenizer()

    def truncate(self, n_rows: int) -> None:
        # Every generation starts by placing its prompt's rows (the resume policy truncates),
        # so this is where one generation's completion ends and the next may begin.
        if self._rows is not None:
            self._rows.truncate(n_rows)
        else:
            del self._live[max(0, n_rows) :]
        self._target = None

    def evaluate(self, tokens: Sequence[int]) -> None:
        if self._rows is not None:
            self._rows.evaluate(tokens)
            return
        if len(self._live) + len(tokens) > self._n_ctx:
            needed = len(self._live) + len(tokens)
            raise ContextOverflow(f"{needed} tokens do not fit the window of {self._n_ctx}")
        self._live.extend(int(t) for t in tokens)

    def logits(self) -> npt.NDArray[np.float32]:
        if self._target is None:
            self._begin_completion()
        assert self._target is not None
        return self._steer(self._target[self._position(self._target) :])

    def save_rows(self) -> RowsSnapshot:
        if self._rows is None:
            raise InternalError("the scripted engine keeps no snapshots (capabilities.snapshots is False)")
        return self._rows.save_rows()

    def load_rows(self, data: RowsSnapshot, tokens: Sequence[int]) -> None:
        if self._rows is None:
            raise InternalError("the scripted engine keeps no snapshots (capabilities.snapshots is False)")
        self._rows.load_rows(data, tokens)
        self._target = None

    def close(self) -> None:
        if self._rows is not None:
            self._rows.close()
        self._file.close()

    # -- steering -------------------------------------------------------------------------

    def _begin_completion(self) -> None:
        """The first logits of a generation: take the next completion, and find where the
        output starts (after the last generation prompt; forced output may already follow)."""
        live = self.live_tokens
        self._output_start = _end_of_last(live, self._generation_prompt)
        prompt: bytes | None = None
        text = ""
        for index, completion in enumerate(self._script.completions):
            if index in self._used:
                continue
            if completion.when is not None:
                if prompt is None:
                    prompt = self.lltokenizer().decode_bytes(list(live[: self._output_start]))
                if completion.when.encode("utf-8") not in prompt:
                    continue
            self._used.add(index)
            text = completion.text
            break
        self._target = text.encode("utf-8")

    def _token_texts(self) -> list[bytes]:
        if self._texts is None:
            tokenizer = self.lltokenizer()
            texts = []
            for token in range(self.n_vocab):
                special = token in self.eos_token_ids or self._vocabulary.is_control(token)
                texts.append(b"" if special else tokenizer.decode_bytes([token]))
            self._texts = texts
            for token, text in enumerate(texts):
                if text:
                    self._by_text.setdefault(text, token)
        return self._texts

    def _position(self, target: bytes) -> int:
        """How far into ``target`` the output has got, token by token: a token that continues
        the target moves on by its length; one that does not (the constraint chose it) is looked
        up further on (when it is long enough to be telling), and steering resumes after it; one
        not found there changes nothing."""
        texts = self._token_texts()
        position = 0
        for token in self.live_tokens[self._output_start :]:
            text = texts[token]
            if not text:
                continue
            if target.startswith(text, position):
                position += len(text)
                continue
            # A lone space or quote would match almost anywhere: only longer texts resync.
            found = target.find(text, position) if len(text.strip()) >= MIN_RESYNC_BYTES else -1
            if found >= 0:
                position = found + len(text)
        return position

    def _steer(self, remainder: bytes) -> npt.NDArray[np.float32]:
        self._token_texts()
        logits = np.zeros(self.n_vocab, dtype=np.float32)
        for text, value in FALLBACK_LOGITS:
            token = self._by_text.get(text)
            if token is not None:
                logits[token] = value
        for eos in self.eos_token_ids:
            logits[eos] = END_LOGIT if not remainder else FALLBACK_EOS_LOGIT
        for length in range(1, min(len(remainder), MAX_TOKEN_BYTES) + 1):
            token = self._by_text.get(remainder[:length])
            if token is not None:
                logits[token] = STEER_LOGIT + length
        return logits


def _end_of_last(tokens: Sequence[int], suffix: Sequence[int]) -> int:
    """The index just after the last occurrence of ``suffix`` in ``tokens`` (0 if none)."""
    n = len(suffix)
    if n == 0:
        return len(tokens)
    for end in range(len(tokens), n - 1, -1):
        if list(tokens[end - n : end]) == list(suffix):
            return end
    return 0
