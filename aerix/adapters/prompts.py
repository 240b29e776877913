"""The embedded prompt texts (``aerix/prompts/*.md``), read through importlib.resources so they
are found in an installed wheel as well as in a checkout.

This is the release's own set. A profile commit's texts stand in front of it behind the same
:class:`aerix.app.ports.PromptSource` port (``aerix.app.profiles.attach``); the reflection prompts
``aerix tune`` and ``aerix profile sync`` give their member are embedded too, but no profile holds
them.
"""

from __future__ import annotations

from functools import cache
from importlib import resources

from aerix.errors import UnknownPrompt

PROMPTS_PACKAGE = "aerix.prompts"
#: Every prompt a profile may tune, by name (the file is ``<name>.md``).
PROMPT_NAMES = ("system", "routing", "planner", "brief", "verifier", "retry", "compacted")
#: What ``aerix tune`` and ``aerix profile sync`` tell their reflection member (never tuned).
REFLECTION_PROMPT_NAMES = ("reflect-tune", "reflect-sync")


class EmbeddedPrompts:
    """:class:`aerix.app.ports.PromptSource` over the texts shipped with this release."""

    def get(self, name: str) -> str:
        return embedded_prompt(name)

    def all(self) -> dict[str, str]:
        return {name: embedded_prompt(name) for name in PROMPT_NAMES}


@cache
def embedded_prompt(name: str) -> str:
    if name not in PROMPT_NAMES and name not in REFLECTION_PROMPT_NAMES:
        raise UnknownPrompt(f"no embedded prompt named {name!r}; the prompts are {', '.join(PROMPT_NAMES)}")
    return resources.files(PROMPTS_PACKAGE).joinpath(f"{name}.md").read_text(encoding="utf-8")
