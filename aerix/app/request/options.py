"""What a session is opened with (``SessionOptions``), what a request on it is asked for
(``RequestOptions``, from the command line or the screen; ``RequestFlags``, the command line's
for every prompt of a stream) and what it runs on (``RequestDeps``: every port; ``aerix.wiring``
builds the real ones)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from aerix.app.ports.diffs import DiffSource
from aerix.app.ports.hooks import HookRunnerFactory
from aerix.app.ports.pool import PoolStarter
from aerix.app.ports.project import ProjectSource, PromptSource
from aerix.app.ports.sessions import Clock, SessionStorage
from aerix.app.ports.tools import ToolRunnerFactory

if TYPE_CHECKING:
    # Named in annotations only: its module, with what the profile commands report, is not
    # loaded by a request (``aerix.app.ports`` loads each name's module on first use).
    from aerix.app.ports.profiles import ProfileStore


@dataclass(frozen=True)
class SessionOptions:
    """What a session is opened with: its folder, and which session it is (``--resume``,
    ``--continue``, ``--session-id``, ``--fork-session``, the screen's ``/clear`` and ``/resume``)
    with the profile it reads its prompts from."""

    cwd: Path
    resume: str | None = None
    continue_latest: bool = False
    #: The id a new session gets (Claude Code's --session-id, or the one the screen shows before
    #: the first request); None: a fresh one (``new_session_id``).
    session_id: str | None = None
    #: --fork-session: the session --resume/--continue names is copied to a new one (its id
    #: ``session_id``, else a fresh one), and the first request goes to the copy.
    fork_session: bool = False
    profile: str | None = None  # --profile; None: the profile setting (a resumed session: its own)
    #: --profile-refresh: the session attaches its profile's newest commit.
    profile_refresh: bool = False


@dataclass(frozen=True)
class RequestOptions:
    """What one request asks of the session it runs on."""

    prompt: str
    max_turns: int | None = None
    #: --profile-refresh: a resumed root reads the system prompt of the commit attached anew.
    profile_refresh: bool = False
    #: Text added to the end of a new session's system segment (--append-system-prompt).
    append_system_prompt: str | None = None
    #: The prompt's bytes as given when they were not valid UTF-8 (``prompt`` has U+FFFD there).
    prompt_bytes: bytes | None = None


@dataclass(frozen=True)
class RequestFlags:
    """What the command line asks of every request besides its prompt: ``--input-format
    stream-json`` runs one request per prompt of its input, each asking these."""

    max_turns: int | None = None
    profile_refresh: bool = False
    #: For a new session's first request only (it shapes the system segment the session keeps).
    append_system_prompt: str | None = None

    def request(self, prompt: str, raw: bytes | None = None, *, first: bool = True) -> RequestOptions:
        """The request of ``prompt`` (``raw``: its bytes, when not valid UTF-8) with these flags;
        ``first``: the session's first request."""
        return RequestOptions(
            prompt,
            self.max_turns,
            self.profile_refresh,
            self.append_system_prompt if first else None,
            raw,
        )


@dataclass
class RequestDeps:
    projects: ProjectSource
    pools: PoolStarter
    sessions: SessionStorage
    diffs: DiffSource
    prompts: PromptSource  # the release's own texts
    profiles: ProfileStore
    embedded: Mapping[str, str]  # every prompt a profile may tune, by name
    tools: ToolRunnerFactory
    #: Makes the runner of the project's hook handlers (used when the project has hooks).
    hooks: HookRunnerFactory
    clock: Clock
    version: str  # aerix's own, recorded in session.start
