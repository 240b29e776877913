"""The quick commands import only what they need: ``aerix --version`` and ``--help`` load the
parser alone, ``caldrix --version`` no model or protocol code, and ``caldrix pool status`` and
``pool stop`` only the protocol's client, none of the daemon; a request builds the event models
it records and validates no line of the log it writes.

Each command runs as a real process through its console script with ``-X importtime``, whose
lines name every module the process imported, so what is checked is what the command loaded.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

import caldrix.protocol
from tests.aerix.request_world import make_project, make_world, start_scripted_pool

BIN = Path(sys.executable).parent

#: What a request, the screen or a session command loads, and the quick commands must not.
AERIX_HEAVY = (
    "prompt_toolkit",
    "rich",
    "aerix.adapters.terminal",
    "aerix.adapters.claude.output",
    "aerix.projections",
    "aerix.domain.events",
    "aerix.domain.settings",
    "aerix.domain.claude_format",
    "aerix.app",
    "aerix.wiring",
    "eventsourcing",
    "pydantic",
    "caldrix",
    "llama_cpp",
    "llguidance",
    "git",
    "gitdb",
)
#: What serving a model loads: the engines, the server, the protocol's models.
CALDRIX_HEAVY = (
    "pydantic",
    "rich",
    "anyio",
    "cbor2",
    "caldrix.protocol.messages",
    "caldrix.protocol.client",
    "caldrix.engine_seam",
    "llama_cpp",
    "llguidance",
    "numpy",
)
#: The daemon's own modules, which a client of the running pool never needs.
DAEMON = (
    "caldrix.server",
    "caldrix.pool",
    "caldrix.members",
    "caldrix.engine_seam",
    "llama_cpp",
    "llguidance",
)


def imported_by(*command: str, tmp_path: Path, cwd: Path | None = None) -> set[str]:
    done = subprocess.run(
        [str(BIN / command[0]), *command[1:]],
        capture_output=True,
        text=True,
        timeout=120,
        env={
            "PYTHONPROFILEIMPORTTIME": "1",
            "PATH": "/usr/bin:/bin",
            "HOME": str(tmp_path),
            "XDG_RUNTIME_DIR": str(tmp_path),
            "XDG_DATA_HOME": str(tmp_path / "data"),
            "XDG_CACHE_HOME": str(tmp_path / "cache"),
            "XDG_CONFIG_HOME": str(tmp_path / "config"),
        },
        cwd=cwd or tmp_path,
    )
    assert "Traceback" not in done.stderr, done.stderr
    return {
        line.split("|")[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")
    }


def loaded(modules: set[str], heavy: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in heavy))


@pytest.mark.parametrize("flag", ["--version", "--help"])
def test_aerix_version_and_help_load_the_parser_alone(flag: str, tmp_path: Path) -> None:
    modules = imported_by("aerix", flag, tmp_path=tmp_path)
    assert "aerix.cli.parser" in modules  # the check sees aerix's imports at all
    assert loaded(modules, AERIX_HEAVY) == []


def test_a_session_command_loads_its_own_modules(tmp_path: Path) -> None:
    """The other side: the command that runs imports what it needs (so the lists above are not
    vacuous), and still not the screen."""
    modules = imported_by("aerix", "sessions", "list", "--all", tmp_path=tmp_path)
    assert {"aerix.cli.sessions", "aerix.wiring.session_commands", "rich.console"} <= modules
    assert loaded(modules, ("prompt_toolkit", "aerix.adapters.terminal", "llama_cpp")) == []


def test_git_runs_without_a_git_library(tmp_path: Path) -> None:
    """A command that runs git (the session listing keys the project by its origin remote) starts
    git processes itself: no gitpython, whose import alone cost a warm request half a second."""
    project = tmp_path / "proj"
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    subprocess.run(
        ["git", "-C", str(project), "remote", "add", "origin", "git@example.org:a/b.git"], check=True
    )
    modules = imported_by("aerix", "sessions", "list", tmp_path=tmp_path, cwd=project)
    assert "aerix.adapters.git.git_runner" in modules  # the check sees the git call at all
    assert loaded(modules, ("git", "gitdb", "smmap")) == []


def test_a_headless_request_loads_none_of_the_screen(tmp_path: Path) -> None:
    """``aerix -p`` with an empty prompt: refused once its modules are imported, before any
    pool is asked; the screen's toolkit is the interactive screen's, and rich is loaded only to
    draw on a terminal (the status line, a coloured diff), which a piped -p never does."""
    modules = imported_by("aerix", "-p", "", tmp_path=tmp_path)
    assert "aerix.wiring.requests" in modules
    assert loaded(modules, ("prompt_toolkit", "rich", "aerix.adapters.terminal.screen")) == []


#: ``aerix -p`` run in a process of its own, which then says (on its last line of stderr) which
#: event models it built, whether it built the union's validator, which reads a log's lines, and
#: which modules it had loaded by its end.
REQUEST_PROBE = """
import json, sys
from aerix.cli.main import main
code = main(sys.argv[1:])
modules = sorted(sys.modules)
import aerix.domain.events as ev
built = [cls.model_fields["type"].default for cls in ev.EVENT_TYPES if cls.__pydantic_complete__]
validator = ev.event_adapter.cache_info().currsize > 0
print(json.dumps({"code": code, "built": built, "validator": validator, "modules": modules}), file=sys.stderr)
"""

#: What a piped request that answers without delegating never uses: the screen and its ports,
#: rich (only a terminal's status line and a coloured diff draw with it), the status line's
#: figures, a piece's modules (loaded at the first ``agent`` call) and the profile commands' ports.
UNUSED_BY_A_PIPED_ANSWER = (
    "prompt_toolkit",
    "rich",
    "aerix.adapters.terminal.screen",
    "aerix.adapters.terminal.live_lines",
    "aerix.app.ports.screen",
    "aerix.app.ports.profiles",
    "aerix.projections.status",
    "aerix.app.delegation.piece",
    "aerix.wiring.screen",
    "aerix.wiring.stream_session",
)


def test_a_request_builds_the_events_it_records_and_no_validator_for_its_log(tmp_path: Path) -> None:
    """A new session's request writes its log and its transcript follows it as it goes: nothing
    is read back, so the union of every event type (the validator a log's lines go through) is
    never built, nor a model of an event the request did not record. Piped, and answered without
    a piece, it loads none of the modules only a terminal or a delegation needs."""
    socket = tmp_path / "run" / "pool.sock"
    world = make_world(tmp_path / "world", {"pool": {"socket": str(socket)}})
    project = make_project(tmp_path / "proj", {"a.txt": "one\n"})
    final = json.dumps({"thought": "Short.", "final": "a.txt holds one line."})
    pool = start_scripted_pool(world, socket, ["answer", final])
    try:
        done = subprocess.run(
            [sys.executable, "-c", REQUEST_PROBE, "-p", "What does a.txt hold?"],
            cwd=project,
            env=world.env,
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        pool.terminate()
        pool.wait(timeout=60)
    probe = json.loads(done.stderr.splitlines()[-1])
    assert probe["code"] == 0 and done.stdout.startswith("a.txt holds one line."), done.stderr
    assert {"session.start", "message", "session.end"} <= set(probe["built"])  # the probe sees builds
    assert not {"compaction", "foreign", "job"} & set(probe["built"])
    assert probe["validator"] is False
    assert "aerix.app.delegation" in probe["modules"]  # the probe sees the request's modules
    assert loaded(set(probe["modules"]), UNUSED_BY_A_PIPED_ANSWER) == []


def test_caldrix_version_loads_no_model_or_protocol_code(tmp_path: Path) -> None:
    modules = imported_by("caldrix", "--version", tmp_path=tmp_path)
    assert "caldrix.cli.main" in modules
    assert loaded(modules, CALDRIX_HEAVY) == []


@pytest.mark.parametrize("action", ["status", "stop"])
def test_pool_status_and_stop_load_the_client_not_the_daemon(action: str, tmp_path: Path) -> None:
    modules = imported_by(
        "caldrix", "pool", action, "--socket", str(tmp_path / "none.sock"), tmp_path=tmp_path
    )
    assert "caldrix.protocol.client" in modules
    assert loaded(modules, DAEMON) == []


def test_caldrix_models_list_builds_no_pydantic_model(tmp_path: Path) -> None:
    modules = imported_by("caldrix", "models", "list", tmp_path=tmp_path)
    assert "caldrix.models.references" in modules
    assert loaded(modules, ("pydantic", "caldrix.engine_seam", "llama_cpp", "anyio")) == []


def test_every_name_of_the_protocol_package_is_its_home_module_s() -> None:
    """The package loads each name on first use; each is the object its module defines."""
    for name in caldrix.protocol.__all__:
        home = importlib.import_module(caldrix.protocol._HOMES[name])
        assert getattr(caldrix.protocol, name) is getattr(home, name)
    assert sorted(caldrix.protocol._HOMES) == sorted(caldrix.protocol.__all__)
    with pytest.raises(AttributeError):
        _ = caldrix.protocol.no_such_name  # type: ignore[attr-defined]
