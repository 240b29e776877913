"""Where aerix keeps things on disk. Every path follows an XDG variable so tests point them
all at a temporary folder."""

from __future__ import annotations

import os
from pathlib import Path


def _xdg(var: str, fallback: str) -> Path:
    value = os.environ.get(var)
    return Path(value) if value else Path.home() / fallback


def data_home() -> Path:
    """``$XDG_DATA_HOME/aerix``: sessions and profiles."""
    return _xdg("XDG_DATA_HOME", ".local/share") / "aerix"


def sessions_root() -> Path:
    """``$XDG_DATA_HOME/aerix/sessions``: one folder per project key."""
    return data_home() / "sessions"


def state_home() -> Path:
    """``$XDG_STATE_HOME/aerix``: logs such as ``pool-start.log``."""
    return _xdg("XDG_STATE_HOME", ".local/state") / "aerix"


def history_file(project: str) -> Path:
    """``$XDG_STATE_HOME/aerix/history/<project key>``: the screen's prompt history for a project."""
    return state_home() / "history" / project


def config_home() -> Path:
    """``$XDG_CONFIG_HOME/aerix``: the user's settings."""
    return _xdg("XDG_CONFIG_HOME", ".config") / "aerix"


def claude_projects_dir() -> Path:
    """Claude Code's own projects folder (``~/.claude/projects``), honouring ``CLAUDE_CONFIG_DIR``."""
    configured = os.environ.get("CLAUDE_CONFIG_DIR")
    base = Path(configured) if configured else Path.home() / ".claude"
    return base / "projects"
