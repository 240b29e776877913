"""top_k and top_p (an addition to generate): the draw happens among the tokens they keep."""

from __future__ import annotations

import numpy as np

from caldrix.generation._sampling import Sampler
from caldrix.protocol.messages import Generate

LOGITS = np.log(np.array([0.5, 0.3, 0.15, 0.05], dtype=np.float32))


def draws(sampler: Sampler, n: int = 400) -> set[int]:
    return {sampler.choose(LOGITS) for _ in range(n)}


def test_without_a_cutoff_every_token_can_be_drawn() -> None:
    assert draws(Sampler(1.0, seed=7)) == {0, 1, 2, 3}


def test_top_k_keeps_the_k_most_likely() -> None:
    assert draws(Sampler(1.0, seed=7, top_k=2)) == {0, 1}
    assert draws(Sampler(1.0, seed=7, top_k=1)) == {0}


def test_top_p_keeps_the_fewest_that_reach_p() -> None:
    assert draws(Sampler(1.0, seed=7, top_p=0.5)) == {0}  # 0.5 alone reaches it
    assert draws(Sampler(1.0, seed=7, top_p=0.8)) == {0, 1}
    assert draws(Sampler(1.0, seed=7, top_p=0.81)) == {0, 1, 2}
    assert draws(Sampler(1.0, seed=7, top_k=2, top_p=0.95)) == {0, 1}  # both apply


def test_greedy_ignores_the_cutoffs() -> None:
    assert draws(Sampler(0.0, seed=None, top_k=3, top_p=0.1), 5) == {0}


def test_generate_carries_them_with_defaults_that_change_nothing() -> None:
    plain = Generate.model_validate({"op": "generate", "rid": 1, "context": "c", "max_new_tokens": 4})
    assert (plain.top_k, plain.top_p) == (0, 1.0)
    given = Generate.model_validate(
        {"op": "generate", "rid": 1, "context": "c", "max_new_tokens": 4, "top_k": 40, "top_p": 0.9}
    )
    assert (given.top_k, given.top_p) == (40, 0.9)
