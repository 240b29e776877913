"""Two plain generation sinks, for code that calls :func:`caldrix.generation.decoding.run_generation`
directly (benchmarks, tests, a program embedding caldrix) rather than through the pool."""

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
