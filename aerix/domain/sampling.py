"""How a turn is drawn: greedily, or sampled when the greedy answer has nowhere to go.

Every turn is greedy (temperature 0): the same context gives the same answer, which is what a
user wants of a tool, and what lets a session be replayed. But a greedy model asked again what
it answered before answers the same: qwen2.5-coder-1.5b, shown its tests failing, wrote the
file it had already written, was told nothing changed, and wrote it again until the repeat
bound ended it. So a turn after one that got nothing done — every call an unchanged repeat or an
error — is drawn at ``context.redraw_temperature`` from the REDRAW_TOP_K most likely tokens,
seeded by the turn's number, so a rerun of the same session draws the same. So is a re-ask
after the pool's guard stopped a degenerating answer: greedily the model would only start the
same loop again. The next turn that gets something done makes the turns after it greedy again.

Why not Qwen2.5-Coder's own settings (temperature 0.7, top-k 20, top-p 0.8): a model copying
its earlier answer gives each next token of the copy well over 80 % of the probability, so
top-p 0.8 keeps that token alone and the draw is the greedy copy again. Redrawing that stuck
bob turn (its try 2, 2,998 rows) on qwen2.5-coder-1.5b: at those settings 2 of 2 draws were the
same file; at temperature 1.0, 2 of 4 were another file with no cut and 1 of 4 over the 40
likeliest tokens; at 1.5 over the 40 likeliest, 3 of 4 (the fourth gave its final).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

#: ``context.redraw_temperature`` by default: hot enough to leave a copy (see above).
DEFAULT_REDRAW_TEMPERATURE: Final = 1.5
#: Above this a small model's sampled turn is mostly noise (the setting's upper bound).
MAX_REDRAW_TEMPERATURE: Final = 2.0
#: The sampled turn keeps this many of the most likely tokens: the long tail of a 150,000-token
#: vocabulary is where a hot draw turns into noise.
REDRAW_TOP_K: Final = 40


@dataclass(frozen=True)
class Sampling:
    """How the pool's ``generate`` draws each token (the protocol's fields)."""

    temperature: float
    seed: int | None
    top_k: int = REDRAW_TOP_K
    top_p: float = 1.0


#: The most likely token every time: the protocol's defaults.
GREEDY: Final = Sampling(0.0, seed=None, top_k=0, top_p=1.0)


def redraw(temperature: float, turn_number: int) -> Sampling | None:
    """The draw of a turn that must not repeat the greedy answer: None (greedy) when
    ``context.redraw_temperature`` is 0."""
    if temperature <= 0.0:
        return None
    return Sampling(temperature, seed=turn_number)
