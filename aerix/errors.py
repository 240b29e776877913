"""Every error a person using aerix may read, in one shallow tree.

Each class carries the one line the user sees (what is wrong, what to do). The CLI prints
``str(error)`` and exits with the error's ``exit_code``; nothing below ever reaches the user as
a traceback. Foreign exceptions (a git that failed, OSError, pydantic, eventsourcing) are translated
into these at the adapter that met them and re-raised ``from`` the original.

    AerixError
    ├── UsageError                    bad command-line input
    │   └── NotADirectory               --cwd (or the current directory) is not a folder
    ├── SettingsError                 a settings file that cannot be used
    ├── UnknownPrompt                 a prompt name the release does not embed
    ├── FileUnusable                  a file or folder aerix needs cannot be read or written
    ├── OutputClosed                  the reader of stdout/stderr went away (a closed pipe)
    ├── PoolError                     the model pool (code: the protocol error code)
    │   ├── PoolUnavailable
    │   ├── PoolStartFailed
    │   └── ContextOverflow
    ├── SessionError                  the session store
        ├── SessionNotFound
        ├── SessionAmbiguous
        ├── SessionBusy                 another process writes this session
        ├── SessionLogCorrupt           a line in the middle of a log is not an event
        ├── SessionSchemaTooNew         written by a newer aerix
        ├── SessionNotResumable         imported sessions cannot be resumed
        └── ClaudeImportError           nothing importable at the given path
    └── ProfileError                  a profile repository
        ├── ProfileUnusable             cannot be opened or read (startup falls back to the embedded prompts)
        ├── ProfileGitFailed            a git command on it failed or ran past its bound
        ├── ProfileRace                 a branch kept moving under a write: CAS_RETRIES exhausted
        └── ProfileChanged              a text changed on the branch while it was being revised
"""

from __future__ import annotations

from aerix.domain.bounds import EXIT_BROKEN_PIPE, EXIT_USAGE


class AerixError(Exception):
    """Base of every aerix error; ``str()`` is the one line shown to the user."""

    exit_code = 1


class UsageError(AerixError):
    """The command line asked for something that cannot be done as written."""

    exit_code = EXIT_USAGE


class NotADirectory(UsageError):
    """The folder aerix should work in is not one."""

    def __init__(self, cwd: object) -> None:
        super().__init__(f"{cwd} is not a directory; run aerix in your project or pass --cwd DIR")


class SessionError(AerixError):
    """Something about the session store."""


class SessionNotFound(SessionError):
    """No session has this id (or id prefix)."""

    def __init__(self, session_id: str) -> None:
        super().__init__(f"no session {session_id!r}; `aerix sessions list` shows the sessions")
        self.session_id = session_id


class SessionAmbiguous(SessionError):
    """An id prefix matches more than one session."""

    def __init__(self, prefix: str, matches: list[str]) -> None:
        shown = ", ".join(sorted(matches)[:4])
        super().__init__(f"{prefix!r} matches {len(matches)} sessions ({shown}); give more of the id")


class SessionBusy(SessionError):
    """Another process holds the session's write lock."""

    def __init__(self, session_id: str, holder: str) -> None:
        super().__init__(
            f"session {session_id} is being written by another aerix process ({holder}); "
            "wait for it to finish or start a new session"
        )
        self.session_id = session_id


class SessionLogCorrupt(SessionError):
    """A complete line of a session log is not a valid event."""

    def __init__(self, path: str, line: int, problem: str) -> None:
        super().__init__(f"{path}:{line}: not a valid session event ({problem}); the log needs a hand repair")
        self.path = path
        self.line = line


class SessionSchemaTooNew(SessionError):
    """A log line carries a schema version this aerix does not know."""

    def __init__(self, path: str, line: int, version: int, known: int) -> None:
        super().__init__(
            f"{path}:{line}: event schema v{version} is newer than this aerix reads (v{known}); upgrade aerix"
        )


class SessionNotResumable(SessionError):
    """The session was imported (from Claude Code) and has no aerix runtime state to resume."""

    def __init__(self, session_id: str, tag: str) -> None:
        super().__init__(
            f"session {session_id} was imported ({tag}) and cannot be resumed; start a new session instead"
        )


class SettingsError(AerixError):
    """A settings file that cannot be used; the message names the file and the key."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class UnknownPrompt(AerixError):
    """A prompt name that the release does not embed (a programming error, said plainly)."""


class FileUnusable(AerixError):
    """A file or folder aerix needs cannot be read or written (the session store's folder is a
    file, no permission, a full disk): the OS error as one line instead of a traceback."""

    def __init__(self, error: OSError) -> None:
        where = f" {error.filename}" if error.filename else ""
        problem = error.strerror or error
        super().__init__(f"cannot use{where} ({problem}); check that path and its permissions")


class OutputClosed(AerixError):
    """The reader of the output went away (``aerix -p … | head -1``): the request stops, as a
    program killed by SIGPIPE would, and its log says why. Nothing more is printed."""

    exit_code = EXIT_BROKEN_PIPE

    def __init__(self) -> None:
        super().__init__("the output was closed (a broken pipe); the request stopped")


class ClaudeImportError(SessionError):
    """``aerix import claude`` found nothing it can read at a path."""


class PoolError(AerixError):
    """The model pool refused a request or could not be reached. ``code`` is the protocol's
    error code (``context_overflow``, ``member_not_found`` …), or ``unavailable``."""

    def __init__(self, message: str, code: str = "internal") -> None:
        super().__init__(message)
        self.code = code


class PoolUnavailable(PoolError):
    """Nothing answers on the pool's socket, or the connection broke or went silent."""

    def __init__(self, message: str) -> None:
        super().__init__(message, code="unavailable")


class PoolStartFailed(PoolError):
    """Autostart ran the pool command but no pool came up in time."""

    def __init__(self, message: str) -> None:
        super().__init__(message, code="start_failed")


class ContextOverflow(PoolError):
    """A generation would not fit in the member's window (tokens + max_new_tokens)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, code="context_overflow")


class ProfileError(AerixError):
    """Something about a profile repository (``$XDG_DATA_HOME/aerix/profiles/<name>.git``)."""


class ProfileUnusable(ProfileError):
    """The profile cannot be opened, created or read: not a git repository, a missing or broken
    object, no permission."""

    def __init__(self, name: str, path: object, problem: str) -> None:
        super().__init__(f"profile {name} ({path}) cannot be used: {problem}")
        self.name = name


class ProfileGitFailed(ProfileError):
    """A git command on a profile failed or did not finish within its bound."""


class ProfileRace(ProfileError):
    """A write found its branch moved on every try: another aerix (or git) keeps writing it."""

    def __init__(self, name: str, branch: str, tries: int) -> None:
        super().__init__(
            f"profile {name}: {branch} moved under this write {tries} times (another aerix or git is "
            "writing it); nothing was committed, try again when it is quiet"
        )
        self.branch = branch


class ProfileChanged(ProfileError):
    """A text changed on its branch while it was being revised or edited; it is not overwritten."""
