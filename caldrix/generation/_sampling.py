"""Choosing the next token from logits: constraint masks, greedy or temperature sampling,
and the top-k log-probabilities the protocol reports."""

from __future__ import annotations

import llguidance.numpy as llnp
import numpy as np
import numpy.typing as npt
from llguidance import LLMatcher

Logits = npt.NDArray[np.float32]


class TokenMask:
    """One reusable bitmask buffer for a matcher's allowed-token sets."""

    def __init__(self, tokenizer_vocab: int, n_vocab: int) -> None:
        self._bitmask = llnp.allocate_token_bitmask(1, tokenizer_vocab)
        self._tokenizer_vocab = tokenizer_vocab
        self._n_vocab = n_vocab

    def allowed(self, matcher: LLMatcher) -> npt.NDArray[np.bool_]:
        """Which of the model's ``n_vocab`` tokens the matcher allows next."""
        llnp.fill_next_token_bitmask(matcher, self._bitmask)
        bits = np.unpackbits(self._bitmask.view(np.uint8), bitorder="little")
        allowed = bits[: self._tokenizer_vocab].astype(bool)
        if self._n_vocab > self._tokenizer_vocab:  # logit rows wider than the vocabulary
            allowed = np.concatenate([allowed, np.zeros(self._n_vocab - self._tokenizer_vocab, bool)])
        return allowed[: self._n_vocab]


def apply_mask(logits: Logits, allowed: npt.NDArray[np.bool_]) -> Logits:
    return np.where(allowed, logits, np.float32(-np.inf)).astype(np.float32, copy=False)


class Sampler:
    """Greedy at temperature 0, else softmax sampling at the temperature, from a seeded
    numpy Generator (the same seed and prompt give the same output). ``top_k`` (0 = all) keeps
    only the k most likely tokens and ``top_p`` (1 = all) the fewest whose probabilities add up
    to p, as llama.cpp's samplers do, before the draw; greedy choice ignores both."""

    def __init__(self, temperature: float, seed: int | None, *, top_k: int = 0, top_p: float = 1.0) -> None:
        self._temperature = temperature
        self._top_k = top_k
        self._top_p = top_p
        self._rng = np.random.default_rng(seed)

    def choose(self, logits: Logits) -> int:
        if self._temperature <= 0.0:
            return int(np.argmax(logits))
        scaled = logits.astype(np.float64) / self._temperature
        scaled -= scaled.max()
        weights = _cut_off(np.exp(scaled), self._top_k, self._top_p)
        cumulative = np.cumsum(weights)
        draw = self._rng.random() * cumulative[-1]
        return int(min(np.searchsorted(cumulative, draw, side="right"), len(cumulative) - 1))


def _cut_off(weights: npt.NDArray[np.float64], top_k: int, top_p: float) -> npt.NDArray[np.float64]:
    """``weights`` with every token outside the top-k and the top-p nucleus set to 0 (the
    most likely token always stays)."""
    if (top_k <= 0 or top_k >= len(weights)) and top_p >= 1.0:
        return weights
    order = np.argsort(-weights, kind="stable")
    keep = len(order) if top_k <= 0 else min(top_k, len(order))
    if top_p < 1.0:
        ranked = weights[order[:keep]]
        reached = np.cumsum(ranked) / ranked.sum()
        keep = min(keep, int(np.searchsorted(reached, top_p, side="left")) + 1)
    cut = np.zeros_like(weights)
    cut[order[:keep]] = weights[order[:keep]]
    return cut


def log_softmax(logits: Logits) -> npt.NDArray[np.float64]:
    values = logits.astype(np.float64)
    peak = values.max()
    return values - peak - np.log(np.sum(np.exp(values - peak)))


def top_logprobs(logprobs: npt.NDArray[np.float64], k: int) -> list[tuple[int, float]]:
    """The ``k`` most likely tokens, most likely first, skipping impossible ones."""
    k = min(k, len(logprobs))
    best = np.argpartition(-logprobs, k - 1)[:k]
    ordered = best[np.argsort(-logprobs[best])]
    return [(int(t), float(logprobs[t])) for t in ordered if np.isfinite(logprobs[t])]
