"""The ``aerix sessions`` and ``aerix import claude`` commands, run as real processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from aerix import __version__
from aerix.adapters.project.project_key import project_key
from aerix.adapters.sessions.session_store import SessionFiles
from aerix.app.sessions.writer import start_session
from aerix.domain import events as ev
from tests.aerix.session_streams import T0
from tests.fixture_files import claude_code_transcripts

FIXTURES = claude_code_transcripts()


def aerix(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "aerix", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={name: value for name, value in os.environ.items() if name != "COLUMNS"},  # a pipe's width
        timeout=120,
    )


@pytest.fixture
def native_session(tmp_path: Path) -> str:
    """An aerix session of the project keyed by ``tmp_path`` (not a git repository)."""
    files = SessionFiles()
    writer = start_session(
        files,
        lambda: T0,
        session="5e551on-0001",
        cwd=str(tmp_path),
        project=project_key(tmp_path),
        model="smollm2-135m",
        prompt="Explain the parser\nin detail",
        aerix_version=__version__,
    )
    writer.record(ev.AgentSpawn, agent="a1", kind="root")
    writer.record(ev.Message, agent="a1", role="assistant", turn=1, text="{}", final="It parses.")
    writer.record(
        ev.Hook, agent="a1", event="PreToolUse", matcher="Bash", command="g.sh", outcome="blocked",
        decision="deny", reason="no", exit=2, duration_ms=12.4, call="c1",
    )  # fmt: skip
    writer.record(ev.Hook, event="Stop", command="sleep 9", outcome="timeout", duration_ms=1000.0)
    writer.record(ev.SessionEnd, outcome="done")
    writer.write_spool("a1.c1", "long output")
    writer.close()
    return "5e551on-0001"


def test_version() -> None:
    result = aerix("--version")
    assert result.returncode == 0 and result.stdout.strip() == f"aerix {__version__}"


def test_list_shows_this_project_s_sessions(tmp_path: Path, native_session: str) -> None:
    listed = aerix("sessions", "list", "--json", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    (entry,) = json.loads(listed.stdout)
    assert (entry["id"], entry["title"], entry["model"], entry["state"], entry["turns"]) == (
        native_session,
        "Explain the parser",
        "smollm2-135m",
        "done",
        1,
    )
    table = aerix("sessions", "list", cwd=tmp_path)
    assert "Explain the parser" in table.stdout and "5e551on-" in table.stdout
    elsewhere = aerix("sessions", "list", cwd=tmp_path.parent)
    assert "no sessions here" in elsewhere.stdout


def test_cwd_names_the_project_listed(tmp_path: Path, native_session: str) -> None:
    listed = aerix("--cwd", str(tmp_path), "sessions", "list", "--json", cwd=tmp_path.parent)
    assert listed.returncode == 0, listed.stderr
    assert [entry["id"] for entry in json.loads(listed.stdout)] == [native_session]
    missing = aerix("--cwd", str(tmp_path / "gone"), "sessions", "list")
    assert (missing.returncode, missing.stderr) == (
        64,
        f"aerix: {tmp_path / 'gone'} is not a directory; run aerix in your project or pass --cwd DIR\n",
    )


@pytest.mark.parametrize(
    ("words", "said"),
    [
        (["session", "list"], "argument COMMAND: invalid choice 'session'; did you mean 'sessions'?"),
        (["sessions", "lst"], "argument SUBCOMMAND: invalid choice 'lst'; did you mean 'list'?"),
        (["-p", "x", "--output-format", "jsn"], "invalid choice 'jsn'; did you mean 'json'?"),
    ],
)
def test_a_mistyped_command_gets_the_nearest_one(words: list[str], said: str) -> None:
    refused = aerix(*words)
    assert refused.returncode == 64
    assert "Traceback" not in refused.stderr
    assert refused.stderr.splitlines()[-1].endswith(said), refused.stderr


def test_piped_list_and_show_keep_state_and_lines_whole(tmp_path: Path) -> None:
    prompt = "Rename every helper of the parser " + "and its callers " * 10
    writer = start_session(
        SessionFiles(),
        lambda: T0,
        session="10n9-7171e",
        cwd=str(tmp_path),
        project=project_key(tmp_path),
        model="qwen2.5-coder-1.5b-instruct-q4_k_m",
        prompt=prompt,
        aerix_version=__version__,
        tags=["refactor"],
    )
    writer.record(ev.SessionEnd, outcome="cancelled")
    writer.close()
    listed = aerix("sessions", "list", cwd=tmp_path)
    header, row = listed.stdout.splitlines()
    assert header.split() == ["id", "updated", "state", "req", "model", "tags", "title"]
    assert " cancelled " in row and row.endswith("…") and len(row) <= 80, row
    shown = aerix("sessions", "show", "10n9")
    (start,) = [line for line in shown.stdout.splitlines() if "▶ request 1" in line]
    assert start.endswith(" ".join(prompt.split())), start  # one line, as long as it is


def test_show_replays_a_session(native_session: str) -> None:
    shown = aerix("sessions", "show", "5e551")
    assert shown.returncode == 0, shown.stderr
    assert (
        "request 1" in shown.stdout
        and "⇒ It parses." in shown.stdout
        and "request ended done" in shown.stdout
    )
    lines = [line[12:] for line in shown.stdout.splitlines()]  # past "    4 12:00 "
    assert "a1 hook PreToolUse[Bash] g.sh → blocked deny (exit 2, 12 ms): no" in lines
    assert "hook Stop sleep 9 → timeout (timeout, 1000 ms)" in lines
    as_json = aerix("sessions", "show", native_session, "--json").stdout.splitlines()
    assert [json.loads(line)["type"] for line in as_json] == [
        "session.start",
        "agent.spawn",
        "message",
        "hook",
        "hook",
        "session.end",
    ]


def test_rm_deletes_log_spool_and_index_entry(tmp_path: Path, native_session: str) -> None:
    removed = aerix("sessions", "rm", native_session)
    assert removed.returncode == 0 and f"removed session {native_session}" in removed.stdout
    assert json.loads(aerix("sessions", "list", "--json", "--all").stdout) == []
    missing = aerix("sessions", "rm", native_session)
    assert missing.returncode == 1
    assert (
        missing.stderr == f"aerix: no session '{native_session}'; `aerix sessions list` shows the sessions\n"
    )


def test_import_then_rebuild_everything(tmp_path: Path) -> None:
    imported = aerix("import", "claude", str(FIXTURES))
    assert imported.returncode == 0, imported.stderr
    assert imported.stdout.count(": new,") == 3
    again = aerix("import", "claude", str(FIXTURES))
    assert again.stdout.count(": unchanged,") == 3
    rebuilt = aerix("sessions", "rebuild", "--all")
    assert rebuilt.returncode == 0, rebuilt.stdout
    assert "rebuilt 3 session(s); 0 with problems" in rebuilt.stdout
    listed = json.loads(aerix("sessions", "list", "--json", "--all").stdout)
    assert {entry["state"] for entry in listed} == {"imported"}
    transcript = SessionFiles().catalog.find("3a7770b4").transcript
    assert [json.loads(line)["type"] for line in transcript.read_text().splitlines()][:2] == [
        "user",
        "assistant",
    ]
    resume = subprocess.run(
        [
            sys.executable,
            "-c",
            "from aerix.app.sessions.queries import load_for_resume; "
            "from aerix.adapters.sessions.session_store import SessionFiles; "
            "load_for_resume(SessionFiles(), '3a7770b4')",
        ],
        capture_output=True,
        text=True,
    )
    assert "cannot be resumed" in resume.stderr


def test_rebuild_reports_what_it_found(native_session: str) -> None:
    ref = SessionFiles().catalog.find(native_session)
    with ref.log.open("ab") as log:
        log.write(b'{"type":"plan","seq":9')  # a torn last line
    rebuilt = aerix("sessions", "rebuild", native_session)
    assert rebuilt.returncode == 1
    assert "an unfinished last line" in rebuilt.stdout and "1 with problems" in rebuilt.stdout
    assert aerix("sessions", "rebuild", native_session).returncode == 0  # set aside: clean now


def test_import_of_a_missing_path_is_one_line(tmp_path: Path) -> None:
    result = aerix("import", "claude", str(tmp_path / "nope"))
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("aerix: nothing at ")
    default = aerix("import", "claude")  # CLAUDE_CONFIG_DIR points at an empty tmp folder in tests
    assert default.returncode == 1 and "nothing at" in default.stderr and "projects" in default.stderr


def test_schema_export_validates_real_lines(tmp_path: Path, native_session: str) -> None:
    written = aerix("sessions", "schema", "--out", str(tmp_path / "schemas"))
    assert written.returncode == 0
    names = sorted(path.name for path in (tmp_path / "schemas").iterdir())
    assert len(names) == len(ev.BY_TYPE) + 1 and "session.start.schema.json" in names
    union = json.loads((tmp_path / "schemas" / "event.schema.json").read_text())
    for line in SessionFiles().catalog.find(native_session).log.read_text().splitlines():
        jsonschema.validate(json.loads(line), union)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"type": "plan", "seq": 1, "time": "2026-01-01T00:00:00Z"}, union)


def _insert_garbage(log: Path) -> None:
    lines = log.read_bytes().splitlines(keepends=True)
    log.write_bytes(b"".join([lines[0], b"garbage {not json\n", *lines[1:]]))


def test_a_log_damaged_in_the_middle_is_one_line_and_hides_no_other_session(
    tmp_path: Path, native_session: str
) -> None:
    """Garbage in the middle of one log: show and rebuild name the file and line; list still lists
    the project's other sessions and names the one it left out."""
    imported = aerix("import", "claude", str(FIXTURES / "spotter_main.jsonl"))
    assert imported.returncode == 0, imported.stderr
    _insert_garbage(SessionFiles().catalog.find(native_session).log)
    shown = aerix("sessions", "show", native_session)
    assert shown.returncode == 1 and shown.stderr.count("\n") == 1
    assert f"{native_session}.jsonl:2: not a valid session event" in shown.stderr
    assert "Traceback" not in shown.stderr
    rebuilt = aerix("sessions", "rebuild", "--all")  # drops the damaged log's index entry
    assert rebuilt.returncode == 1 and f"{native_session}.jsonl:2:" in rebuilt.stdout
    listed = aerix("sessions", "list", "--all", "--json")  # so list must read the log itself
    assert listed.returncode == 1 and "Traceback" not in listed.stderr
    assert [entry["id"] for entry in json.loads(listed.stdout)] == ["4d5611e5-241a-462a-8d15-5122611a9569"]
    assert listed.stderr.count("\n") == 1 and f"{native_session} left out: " in listed.stderr


def test_rm_of_a_session_another_process_writes_is_refused_in_one_line(native_session: str) -> None:
    """A real second process holds the session as its writer; rm refuses and removes nothing."""
    ref = SessionFiles().catalog.find(native_session)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            (
                "import sys\nfrom aerix.adapters.sessions.session_store import SessionFiles\n"
                "files = SessionFiles()\nfiles.log.acquire(files.catalog.find(sys.argv[1]))\n"
                "print('held', flush=True)\nsys.stdin.read()\n"
            ),
            native_session,
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=os.environ.copy(),
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        refused = aerix("sessions", "rm", native_session)
        assert refused.returncode == 1 and refused.stderr.count("\n") == 1
        assert "is being written by another aerix process" in refused.stderr
        assert ref.log.exists()
    finally:
        holder.communicate("", timeout=30)
    assert aerix("sessions", "rm", native_session).returncode == 0 and not ref.log.exists()


def test_an_unreadable_transcript_is_one_line_and_nothing_is_stored(tmp_path: Path) -> None:
    """/proc/self/mem opens but fails every read at offset 0 (EIO), even for root, whom a chmod
    would not stop: a real unreadable file, beside a good transcript in one folder."""
    folder = tmp_path / "claude"
    folder.mkdir()
    (folder / "broken.jsonl").symlink_to("/proc/self/mem")
    (folder / "good.jsonl").write_bytes((FIXTURES / "spotter_sub.jsonl").read_bytes())
    result = aerix("import", "claude", str(folder))
    assert result.returncode == 1 and result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith(f"aerix: cannot read {folder / 'broken.jsonl'} (")
    assert json.loads(aerix("sessions", "list", "--all", "--json").stdout) == []


def test_a_store_folder_that_cannot_be_used_is_one_line(tmp_path: Path) -> None:
    """XDG_DATA_HOME naming a file: every sessions command says so in one line."""
    not_a_folder = tmp_path / "data-is-a-file"
    not_a_folder.write_text("")
    env = {**os.environ, "XDG_DATA_HOME": str(not_a_folder)}
    for args in (["sessions", "list"], ["import", "claude", str(FIXTURES / "spotter_sub.jsonl")]):
        result = subprocess.run(
            [sys.executable, "-m", "aerix", *args],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env=env,
            timeout=120,
        )
        assert result.returncode == 1 and result.stderr.count("\n") == 1, result.stderr
        assert result.stderr.startswith(f"aerix: cannot use {not_a_folder}/aerix/sessions/")
        assert "(Not a directory); check that path" in result.stderr


def test_files_that_are_not_claude_code_transcripts_are_left_out(tmp_path: Path) -> None:
    """A stray .jsonl and a binary beside a real transcript: each named in one line and left out
    (no session is made of them); a folder of nothing else is refused in one line."""
    folder = tmp_path / "mixed"
    folder.mkdir()
    (folder / "binary.jsonl").write_bytes(bytes(range(256)) * 8)
    (folder / "other.jsonl").write_text('{"a": 1}\nnot json\n')
    result = aerix("import", "claude", str(folder))
    assert result.returncode == 1 and result.stderr.count("\n") == 1
    assert result.stderr == f"aerix: no Claude Code transcripts under {folder}\n"
    assert f"{folder / 'binary.jsonl'}: no record names a Claude Code session" in result.stdout
    (folder / "session.jsonl").write_bytes((FIXTURES / "spotter_sub.jsonl").read_bytes())
    result = aerix("import", "claude", str(folder))
    assert result.returncode == 0, result.stderr
    assert f"{folder / 'other.jsonl'}: no record names a Claude Code session" in result.stdout
    assert "imported from 1 file(s)" in result.stdout
    (entry,) = json.loads(aerix("sessions", "list", "--all", "--json").stdout)
    assert entry["id"] == "4d5611e5-241a-462a-8d15-5122611a9569"


@pytest.mark.parametrize(
    ("argv", "words", "prompt"),
    [
        (["fix the test"], [], "fix the test"),
        (["--resume", "abc", "go on"], ["--resume", "abc"], "go on"),
        (
            ["--cwd", "/x", "--continue", "more", "--max-turns", "3"],
            ["--cwd", "/x", "--continue", "--max-turns", "3"],
            "more",
        ),
        (["sessions", "list"], ["sessions", "list"], None),
        # A near miss of a command is left for the parser's "did you mean"; a mere likeness is not.
        (["session", "list"], ["session", "list"], None),
        (["more"], [], "more"),
        (["-p", "hi"], ["-p", "hi"], None),
        (["-p", "--output-format", "json", "hi"], ["-p", "--output-format", "json"], "hi"),
        (["--", "-starts with a dash"], [], "-starts with a dash"),
        ([], [], None),
    ],
)
def test_the_first_prompt_is_the_first_word_that_is_no_flag_value_or_command(
    argv: list[str], words: list[str], prompt: str | None
) -> None:
    from aerix.cli.main import split_prompt

    assert split_prompt(argv, ["sessions", "import"]) == (words, prompt)
