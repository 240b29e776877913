"""Shared fixtures: every XDG path points into the test's own temporary folder."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def isolated_xdg(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point XDG data/state/config/runtime at a fresh folder. The model cache
    (``XDG_CACHE_HOME``) is left alone so the test model setup installs (smollm2-135m) is found."""
    root = tmp_path_factory.mktemp("xdg")
    for var in ("XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CONFIG_HOME", "XDG_RUNTIME_DIR"):
        path = root / var.lower()
        path.mkdir()
        monkeypatch.setenv(var, str(path))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(root / "claude"))
    return root
