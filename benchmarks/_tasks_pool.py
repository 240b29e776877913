"""A fresh pool for each agent run of ``bench_tasks.py``, and the pool's own figures for it.

Every agent reaches the pool through :class:`PoolMeter`, a pass-through on a Unix socket of its
own in front of the pool's: it forwards the bytes both ways unchanged and reads the frames as
they pass, counting each ``generate`` sent and adding up each ``done`` frame the pool answers
with. aerix talks to it directly, Aider and Claude Code through ``caldrix serve`` on it, so
each agent's figures are the same sums of the same frames: rows prefilled (``prompt_tokens``
less ``recomputed_from``: the rows the pool computed) and tokens decoded
(``completion_tokens``). A generation its client left before its end (a timeout, Claude Code's
resend) has no ``done`` frame: it is counted apart, as unfinished, its work not in the sums.
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from caldrix.protocol.framing import FrameDecoder, NeedMore
from tests.caldrix.pool_harness import start_pool

#: Where a run's sockets go: short on every Unix, as caldrix's own default (/tmp/caldrix-UID).
SOCKET_ROOT = "/tmp"


@dataclass
class PoolFigures:
    """The sums of one run's generations, as the pool reported them."""

    generations: int = 0
    """``generate`` requests sent."""
    finished: int = 0
    """``done`` frames answered: the generations the sums below cover."""
    prompt_rows: int = 0
    rows: int = 0
    """Prompt rows the pool computed (the rest it resumed from live rows or its prefix store)."""
    tokens: int = 0

    @property
    def unfinished(self) -> int:
        return self.generations - self.finished

    def as_row(self) -> dict[str, Any]:
        return {**asdict(self), "unfinished": self.unfinished}


class PoolMeter:
    """A pass-through on ``path`` to the pool on ``upstream`` that adds up the pool's figures."""

    def __init__(self, path: Path, upstream: Path) -> None:
        self.path, self.upstream = path, upstream
        self.figures = PoolFigures()
        self._lock = threading.Lock()
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(os.fspath(path))
        self._listener.listen(16)
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        self._listener.close()
        self.path.unlink(missing_ok=True)

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:  # closed: the run is over
                return
            pool = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                pool.connect(os.fspath(self.upstream))
            except OSError:
                client.close()
                pool.close()
                continue
            threading.Thread(target=self._pipe, args=(client, pool, self._sent, False), daemon=True).start()
            threading.Thread(
                target=self._pipe, args=(pool, client, self._answered, True), daemon=True
            ).start()

    def _pipe(self, source: socket.socket, sink: socket.socket, seen: Any, last: bool) -> None:
        """Forward ``source`` to ``sink`` until it ends, showing each whole frame to ``seen``;
        the end of the pool's side (``last``) closes both sockets."""
        decoder: FrameDecoder | None = FrameDecoder("cbor")
        try:
            while data := source.recv(65536):
                if decoder is not None:  # counted before it is forwarded: once a client has
                    try:  # its answer, the figures hold it
                        decoder.feed(data)
                        while not isinstance(message := decoder.next_message(), NeedMore):
                            seen(message)
                    except Exception:  # not frames this meter reads: forwarded all the same
                        decoder = None
                sink.sendall(data)
        except OSError:
            pass
        finally:
            with suppress(OSError):
                sink.shutdown(socket.SHUT_WR)  # a client that left: the pool cancels its generation
            if last:  # the pool has closed: wake the other direction's recv, then close
                with suppress(OSError):
                    sink.shutdown(socket.SHUT_RDWR)
                source.close()
                sink.close()

    def _sent(self, message: dict[str, Any]) -> None:
        if message.get("op") == "generate":
            with self._lock:
                self.figures.generations += 1

    def _answered(self, message: dict[str, Any]) -> None:
        if message.get("op") != "done":
            return
        prompt = int(message.get("prompt_tokens") or 0)
        with self._lock:
            self.figures.finished += 1
            self.figures.prompt_rows += prompt
            self.figures.rows += prompt - int(message.get("recomputed_from") or 0)
            self.figures.tokens += int(message.get("completion_tokens") or 0)


@dataclass(frozen=True)
class PoolSpec:
    """What every run's pool is started with: the same model, threads and flags for every agent."""

    model: str
    threads: int | None = None
    flags: Sequence[str] = ()
    script: Path | None = None
    """With it, the member is caldrix's scripted engine on ``model``'s vocabulary (for tests)."""

    def args(self) -> list[str]:
        args = ["--load", self.model, *self.flags, "--idle-timeout", "0"]
        if self.threads:
            args += ["--threads", str(self.threads)]
        if self.script is not None:
            args += ["--engine", "scripted", "--script", str(self.script)]
        return args


@contextmanager
def metered_pool(folder: Path, spec: PoolSpec) -> Iterator[PoolMeter]:
    """A pool started fresh in ``folder`` and its meter (clients use ``meter.path``); both are
    stopped when the block ends, so no prefix store outlives one agent's run."""
    folder.mkdir(parents=True, exist_ok=True)
    # The sockets live in a short folder of their own, not in ``folder``: under a long TMPDIR
    # (pytest's, a CI runner's) the run's folder is past what a Unix socket path may be.
    sockets = Path(tempfile.mkdtemp(prefix="bench-pool-", dir=SOCKET_ROOT))
    try:
        pool = start_pool(folder, *spec.args(), socket_path=sockets / "pool.sock")
        try:
            meter = PoolMeter(sockets / "meter.sock", pool.socket_path)
            try:
                yield meter
            finally:
                meter.close()
        finally:
            pool.stop()
    finally:
        shutil.rmtree(sockets, ignore_errors=True)
