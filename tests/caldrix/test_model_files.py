"""A model file is opened once: a name swapped for a named pipe (or another file) after the
checks cannot make the native loader hang or read something else.

The swap is made at the worst moment, right after the engine has chosen the path it gives the
native loader, by wrapping that choice; each load runs in a child process with a deadline,
since a loader that opened the pipe by name would wait for a writer for ever.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from caldrix.models.files import PROC_FD_FOLDER, native_path, open_regular_file
from tests.caldrix.ggml_writer import write_tiny_gpt2
from tests.default_model import default_model_path

#: How long a load may take before the test calls it hung (the tiny models load in well under
#: a second, the test model in a few).
LOAD_DEADLINE_S = 120.0

pytestmark = pytest.mark.skipif(not PROC_FD_FOLDER.exists(), reason="needs /proc/self/fd (Linux)")


def test_the_native_path_names_the_opened_file_whatever_the_name_names_now(tmp_path: Path) -> None:
    path = tmp_path / "model.bin"
    path.write_bytes(b"the real weights")
    with open_regular_file(path) as handle:
        pinned = native_path(handle, path)
        path.unlink()
        os.mkfifo(path)
        assert pinned != str(path)
        fd = os.open(pinned, os.O_RDONLY | os.O_NONBLOCK)
        try:
            assert os.read(fd, 100) == b"the real weights"
        finally:
            os.close(fd)


SWAP_AND_LOAD = textwrap.dedent(
    """
    import os, sys
    from pathlib import Path
    import caldrix.engines.{module} as engine
    from caldrix.engine_seam import ServingFlags

    path = Path(sys.argv[1])
    chosen = engine.native_path

    def native_path_then_swap(handle, name):
        native = chosen(handle, name)
        path.rename(path.with_name("moved-away"))
        os.mkfifo(path)
        return native

    engine.native_path = native_path_then_swap
    loaded = engine.{opener}(path, ServingFlags(ctx=256{flags}))
    print("loaded", loaded.n_vocab, flush=True)
    """
)


@pytest.mark.parametrize(
    ("module", "opener", "flags"),
    [("ctransformers", "open_ctransformers", ", model_type='gpt2'"), ("llamacpp", "open_llamacpp", "")],
)
def test_a_name_swapped_for_a_pipe_after_the_checks_still_loads_the_file(
    tmp_path: Path, module: str, opener: str, flags: str
) -> None:
    if module == "ctransformers":
        path = write_tiny_gpt2(tmp_path / "tiny.bin")
    else:
        path = tmp_path / "model.gguf"
        path.write_bytes(default_model_path().read_bytes())
    script = SWAP_AND_LOAD.format(module=module, opener=opener, flags=flags)
    ran = subprocess.run(
        [sys.executable, "-c", script, str(path)],
        capture_output=True,
        text=True,
        timeout=LOAD_DEADLINE_S,
        stdin=subprocess.DEVNULL,
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.startswith("loaded "), ran.stdout
    assert path.is_fifo(), "the swap did not happen"
