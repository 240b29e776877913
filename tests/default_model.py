"""The tests' embedded model's file, found the way a user's command finds it: ``smollm2-135m``,
not the default model (qwen2.5-coder-1.5b), which no test loads.

``scripts/setup`` puts ``smollm2-135m`` into the model cache; a test that opens the file directly
(rather than through the daemon) takes its path from here.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from caldrix.models.references import resolve_model

DEFAULT_MODEL_NAME = "smollm2-135m"


@cache
def default_model_path() -> Path:
    return resolve_model(DEFAULT_MODEL_NAME).path
