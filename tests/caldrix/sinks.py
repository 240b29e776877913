"""Two plain generation sinks, for tests and benchmarks that call
:func:`caldrix.generation.decoding.run_generation` (or a prefix store's ``generate``) directly
rather than through the pool, whose connection is the product's sink."""

from __future__ import annotations


class DiscardingSink:
    """Takes every report and keeps nothing; never cancels."""

    def progress(self, done: int, total: int) -> None:
        pass

    def token(self, text: str) -> None:
        pass

    def cancelled(self) -> bool:
        return False


class CollectingSink:
    """Keeps the streamed pieces of text and the progress reports; never cancels."""

    def __init__(self) -> None:
        self.pieces: list[str] = []
        self.progress_reports: list[tuple[int, int]] = []

    @property
    def text(self) -> str:
        return "".join(self.pieces)

    def progress(self, done: int, total: int) -> None:
        self.progress_reports.append((done, total))

    def token(self, text: str) -> None:
        self.pieces.append(text)

    def cancelled(self) -> bool:
        return False
