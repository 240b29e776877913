"""A request's usage: the pool's figures of each generation (``events.Usage``) summed."""

from __future__ import annotations

from dataclasses import dataclass

from aerix.domain.events import Usage


@dataclass(frozen=True)
class RequestUsage:
    """The pool's figures summed over every generation of the request."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    generations: int = 0
    #: The prompt rows the prefix store gave back (each generation's ``recomputed_from``).
    reused_tokens: int = 0
    #: Time the pool spent prefilling and decoding, over every generation.
    pool_ms: float = 0.0

    def plus(self, usage: Usage) -> RequestUsage:
        """These figures with one more generation's."""
        return RequestUsage(
            self.prompt_tokens + usage.prompt_tokens,
            self.completion_tokens + usage.completion_tokens,
            self.generations + 1,
            self.reused_tokens + (usage.recomputed_from or 0),
            self.pool_ms + (usage.prefill_ms or 0.0) + (usage.decode_ms or 0.0),
        )
