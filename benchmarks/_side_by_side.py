"""Two sides measured in turn, round after round, for a paired comparison on a shared machine."""

from __future__ import annotations

from collections.abc import Callable


def paired(rounds: int, left: Callable[[], float], right: Callable[[], float]) -> list[tuple[float, float]]:
    """Each round's (left, right) figures. The order alternates each round, so an order effect
    cancels out, and each pair shares its minute of the machine: a slow minute hits both sides,
    which is why a comparison takes the median of the per-round ratios."""
    pairs: list[tuple[float, float]] = []
    for i in range(rounds):
        if i % 2:
            right_figure = right()
            left_figure = left()
        else:
            left_figure = left()
            right_figure = right()
        pairs.append((left_figure, right_figure))
    return pairs
