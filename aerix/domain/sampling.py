"""How a turn is drawn: greedily, or sampled when the greedy answer has nowhere to go.

Every turn is greedy (temperature 0): the same context gives the same answer, which is what a
user wants of a tool, and what lets a session be replayed. But a greedy model asked again what
it answered before answers the same: qwen2.5-coder-1.5b, shown its tests failing, wrote the
file it had already written, was told nothing changed, and wrote it again until the repeat
bound ended it. So a turn after one that got nothing done — every call an unchanged repeat or an
error — is drawn at ``context.redraw_temperature`` from the REDRAW_TOP_K most likely tokens
within REDRAW_TOP_P of the probability (Qwen2.5-Coder's own sampling settings), seeded by the
turn's number, so a rerun of the same session draws the same. So is a re-ask after the pool's
guard stopped a degenerating answer: greedily the model would only start the same loop again.
The next turn that gets something done makes the turns after it greedy again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

#: ``context.redraw_temperature`` by default: Qwen2.5-Coder's own temperature.
DEFAULT_REDRAW_TEMPERATURE: Final = 0.7
#: Above this a small model's sampled turn is mostly noise (the setting's upper bound).
MAX_REDRAW_TEMPERATURE: Final = 2.0
#: The sampled turn keeps this many of the most likely tokens (Qwen2.5-Coder's generation config).
REDRAW_TOP_K: Final = 20
#: … and of those the fewest whose probabilities reach this share.
REDRAW_TOP_P: Final = 0.8


@dataclass(frozen=True)
class Sampling:
    """How the pool's ``generate`` draws each token (the protocol's fields)."""

    temperature: float
    seed: int | None
    top_k: int = REDRAW_TOP_K
    top_p: float = REDRAW_TOP_P


#: The most likely token every time: the protocol's defaults.
GREEDY: Final = Sampling(0.0, seed=None, top_k=0, top_p=1.0)


def redraw(temperature: float, turn_number: int) -> Sampling | None:
    """The draw of a turn that must not repeat the greedy answer: None (greedy) when
    ``context.redraw_temperature`` is 0."""
    if temperature <= 0.0:
        return None
    return Sampling(temperature, seed=turn_number)
