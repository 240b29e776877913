"""The bounds caldrix puts on what a client or a model file may ask of it, in one place.

Each is a refusal a person can act on, not a crash: a request past a bound gets one line
(``bad_request``, ``model_not_found``, ``precheck_failed`` or ``context_overflow``) naming the
bound and the figure it was given. This module imports nothing of caldrix, so every part of it
may use these names.
"""

from __future__ import annotations

from typing import Final

# --- what an error message may repeat of the client's input ---------------------------------

#: Characters of a client's string an error message quotes; a longer one is cut, with "…".
ECHO_CHARS: Final = 80
#: The longest error ``message`` sent: a message is one line for a person, never a dump.
MESSAGE_CHARS: Final = 1000

# --- requests ---------------------------------------------------------------------------------

#: The longest model reference ``member.load`` (and ``caldrix run``) accepts: Linux's PATH_MAX.
#: A longer one cannot name a file, and URLs and hub names are far shorter.
MODEL_REFERENCE_CHARS: Final = 4096
#: The largest ``seed`` of a ``generate``: seeds are unsigned 64-bit integers (0 … 2**64 - 1).
MAX_SEED: Final = 2**64 - 1

# --- contexts ---------------------------------------------------------------------------------

#: A context may hold at most this many of its member's windows in tokens: room to trim a long
#: conversation before generating, not a store for arbitrary amounts of text.
CONTEXT_WINDOWS: Final = 4
#: Characters of segment text a context may hold per token of its bound (checked before the
#: text is tokenized, so a huge text is refused without rendering it). Real text averages 3–5
#: characters a token; this leaves room for text that tokenizes poorly.
CONTEXT_CHARS_PER_TOKEN: Final = 8

# --- legacy GGML headers ------------------------------------------------------------------------

#: The fewest bytes a vocabulary entry of a legacy GGML file takes: its u32 length.
LEGACY_VOCAB_ENTRY_MIN_BYTES: Final = 4
#: The fewest bytes a weight takes in any legacy tensor type (q2_K packs 256 in 84 bytes, about
#: 0.33; the bound rounds down). The weights a header's figures imply must fit in the file.
LEGACY_MIN_BYTES_PER_WEIGHT: Final = 0.25
#: The scratch buffer ggml's example loaders evaluate in (256 MiB, grown on demand), counted in
#: a legacy model's footprint beside its weights and KV.
LEGACY_SCRATCH_BYTES: Final = 256 * 1024 * 1024

#: How long a signalled pool lets connections finish the request they are answering, by
#: default (``caldrix pool --shutdown-grace``).
SHUTDOWN_GRACE_SECS: Final = 10.0

# --- the degeneration guard of a ``generate`` (its ``guard`` field) ------------------------------
# A small model that has lost its way writes until max_new_tokens: a span of tokens over and
# over, or one JSON string that never closes. These are the defaults of every ``guard`` field
# left out; caldrix/generation/degeneration.py is the guard.

#: A generation is stopped when one span of at most this many tokens repeats back to back …
#: (long enough for a whole `{"tool": …}, {"tool": …}` pair of calls, a sentence, or a small
#: file's functions written again.)
DEGENERATE_SPAN_MAX_TOKENS: Final = 512
#: … at least this many times in a row …
DEGENERATE_REPEATS: Final = 4
#: … over at least this many tokens (so a short repeated span must repeat longer).
DEGENERATE_RUN_MIN_TOKENS: Final = 64
#: … or, for a long span, once it has come twice and the run is this many tokens: qwen2.5-coder-1.5b
#: wrote simple_cipher.py's three methods (about 330 tokens) over and over inside one write until
#: its 2,048 tokens ran out, where four repeats would have been 1,320 tokens in.
DEGENERATE_LONG_RUN_TOKENS: Final = 512
#: A generation is stopped when one quoted string runs this many characters without closing or
#: breaking its line (a newline or a ``\n`` escape): no file's line or paragraph is that long.
OPEN_STRING_LINE_MAX_CHARS: Final = 2000
#: A generation is stopped when this many lines in a row (empty ones aside) say the same words
#: with only their numbers different: qwen2.5-coder-1.5b, writing a test file nobody asked for,
#: went on with `self.assertEqual(convert(N), 'PlingPlong')` for N = 22, 23, 24 … until its
#: 2,048 tokens ran out, 2.5 minutes of decode no span check sees (each line's number differs).
#: The longest such run in caldrix's code and docs and the Exercism tests is 15 lines.
DEGENERATE_SIMILAR_LINES: Final = 20
#: … lines that hold at least this many letters: a table of bare numbers (a test's list of
#: primes, a type table `41: (128, 18),`) is data, and runs long.
SIMILAR_LINE_MIN_LETTERS: Final = 8
#: The longest span a client may ask the guard to watch for: the guard's work per token grows
#: with it (each token is compared with its occurrences this far back).
GUARD_SPAN_LIMIT_TOKENS: Final = 1024

# --- Serving defaults ------------------------------------------------------------------------
# Here rather than in caldrix.engine_seam (pydantic's models) so that the model commands
# (``caldrix models list``, the fit) read them without building those models.
#: The window a member gets when neither the flags nor a smaller training window say otherwise.
DEFAULT_CTX: Final = 8192
#: Rows evaluated per batch during a prefill; small enough that progress is reported often.
DEFAULT_BATCH: Final = 256
#: With flash attention (``--flash-attention``), llama.cpp's CPU attention computes the same rows
#: and logits for any split of a prompt whose batches all hold at least this many rows, and other
#: ones below it (measured on SmolLM2-135M, docs/benchmarks.md): such a member's batches, resumed
#: tails and recomputed answers never hold fewer, so a resume still answers as a cold prefill.
FLASH_ATTENTION_EXACT_ROWS: Final = 64
