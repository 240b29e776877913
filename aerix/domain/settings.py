"""The settings models: every key a settings file may hold, with its default.

Keys are grouped as the spec names them: ``profile``, ``pool.*``, ``delegation.*``, ``context.*``,
``tune.*``, ``session.*`` and ``hooks`` (Claude Code's shape), plus Claude Code's ``disableAllHooks``,
``enabledPlugins`` and ``permissions``. Unknown keys are errors, so a typo is reported with the
file and the key rather than silently ignored. Reading and merging the files is
``aerix.adapters.project.settings_files``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from aerix.domain import bounds
from aerix.domain.events.base import ROUTE_NAMES
from aerix.domain.permission_rules import RuleError, parse_rule
from aerix.domain.profile import PROFILE_NAME_RULE, valid_profile_name
from aerix.domain.tools import DEFAULT_PLANNER_ROUTES, DEFAULT_PLANNER_TOOLS, TOOL_NAMES

DEFAULT_PROFILE = "default"
#: ``pool.main`` when no settings file names a model: the embedded Qwen2.5-Coder-1.5B-Instruct,
#: which ``scripts/setup`` pulls. caldrix names the same model ``DEFAULT_MODEL_NAME``
#: (caldrix.models.embedded) in its hints; the domain imports nothing of caldrix, so the name is
#: spelt here too and a test holds the two equal.
DEFAULT_MAIN_MODEL = "qwen2.5-coder-1.5b"


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class MemberFlags(_Section):
    """Serving flags for a pool member, as ``caldrix pool`` takes them (all optional)."""

    ctx: int | None = Field(default=None, gt=0, description="context window in tokens")
    threads: int | None = Field(default=None, gt=0, description="CPU threads for the engine")
    batch: int | None = Field(default=None, gt=0, description="rows per prefill batch")
    engine: Literal["auto", "llamacpp", "ctransformers"] | None = None
    chat_template: str | None = None
    model_type: str | None = None
    memory_limit: int | None = Field(default=None, gt=0, description="bytes the pool may use")
    api_key_env: str | None = Field(
        default=None, description="for an openai+http(s):// model: the variable holding the server's API key"
    )
    flash_attention: bool | None = Field(
        default=None, description="llama.cpp's flash attention: faster long prefills, 64-row resumes"
    )

    def as_cli_args(self) -> list[str]:
        """``--ctx 8192 --threads 2 …`` for the autostart command line; a switch such as
        ``flash_attention`` is its flag alone when true, and nothing when false."""
        args: list[str] = []
        for name, value in self.model_dump(exclude_none=True).items():
            flag = f"--{name.replace('_', '-')}"
            if isinstance(value, bool):
                args += [flag] if value else []
            else:
                args += [flag, str(value)]
        return args

    def as_load_flags(self) -> dict[str, Any]:
        """The ``flags`` map of a ``member.load`` request."""
        return self.model_dump(exclude_none=True)


class PoolSettings(_Section):
    """``pool.*``: which caldrix to start and which models to bind."""

    caldrix: str = Field(default="caldrix", description="the caldrix command (a name on PATH or a path)")
    socket: str | None = Field(default=None, description="the pool's socket; None = caldrix's default")
    main: str = Field(default=DEFAULT_MAIN_MODEL, description="model reference of the main member")
    main_flags: MemberFlags = MemberFlags()
    decision: str | None = Field(default=None, description="model of the decision member; None = main routes")
    decision_flags: MemberFlags = MemberFlags()
    start_timeout_secs: float = Field(default=900, gt=0, description="autostart and member-load wait")
    max_connections: int = Field(default=4, gt=0, description="concurrent generations")


class DelegationSettings(_Section):
    """``delegation.*``: agents, pieces and their bounds."""

    max_turns: int = Field(default=40, gt=0, description="turn budget of an agent")
    retries: int = Field(default=2, ge=0, description="verifier retries of a piece")
    depth: int = Field(default=3, ge=0, description="an agent at this depth cannot spawn")
    parallel: int = Field(default=4, gt=0, description="pieces of one turn running at once")
    planner_tools: tuple[str, ...] = Field(
        default=DEFAULT_PLANNER_TOOLS, description="tools of a root agent whose route is a planner's"
    )
    planner_routes: tuple[str, ...] = Field(
        default=DEFAULT_PLANNER_ROUTES,
        description="routes whose root is a planner (planner_tools only); other roots have every tool",
    )

    @field_validator("planner_routes")
    @classmethod
    def _known_routes(cls, routes: tuple[str, ...]) -> tuple[str, ...]:
        unknown = [route for route in routes if route not in ROUTE_NAMES]
        if unknown:
            raise ValueError(f"unknown route {', '.join(unknown)}; routes are {', '.join(ROUTE_NAMES)}")
        return routes

    @field_validator("planner_tools")
    @classmethod
    def _known_tools(cls, tools: tuple[str, ...]) -> tuple[str, ...]:
        unknown = [tool for tool in tools if tool not in TOOL_NAMES]
        if unknown:
            raise ValueError(f"unknown tool {', '.join(unknown)}; tools are {', '.join(TOOL_NAMES)}")
        return tools


class ToolCaps(_Section):
    """``context.tool_caps``: the longest result (in bytes) each tool may append whole."""

    read: int = Field(default=16_000, gt=0)
    write: int = Field(default=2_000, gt=0)
    edit: int = Field(default=2_000, gt=0)
    bash: int = Field(default=16_000, gt=0)
    glob: int = Field(default=8_000, gt=0)
    grep: int = Field(default=12_000, gt=0)
    repo_map: int = Field(default=12_000, gt=0)
    plan: int = Field(default=8_000, gt=0)
    context: int = Field(default=8_000, gt=0)
    agent: int = Field(default=4_000, gt=0)
    skill: int = Field(default=16_000, gt=0)
    web_fetch: int = Field(default=2_000, gt=0)
    web_search: int = Field(default=2_000, gt=0)
    #: Background job reports ([job jN exited N] with the output) share bash's kind of output.
    job: int = Field(default=16_000, gt=0)

    def cap_for(self, tool: str) -> int:
        """The cap of a tool by name; an unknown name gets bash's (the most general output)."""
        caps: dict[str, int] = self.model_dump()
        return caps.get(tool, self.bash)


class ContextSettings(_Section):
    """``context.*``: the budget the runtime keeps for every context."""

    soft_ratio: float = Field(default=0.70, gt=0, le=1, description="compact above this share of the window")
    target_ratio: float = Field(default=0.50, gt=0, le=1, description="compact down to this share")
    max_new_tokens: int = Field(default=2048, gt=0, description="a turn asks min(this, window/4)")
    tool_caps: ToolCaps = ToolCaps()
    skills_chars: int = Field(default=4000, ge=0, description="room for the skill list in the system segment")
    agents_chars: int = Field(
        default=2000, ge=0, description="room for the agent definition list in the system segment"
    )

    @model_validator(mode="after")
    def _target_below_soft(self) -> ContextSettings:
        if self.target_ratio > self.soft_ratio:
            raise ValueError("target_ratio must not exceed soft_ratio")
        return self


SyncPolicy = Literal["commit", "release"]


class SessionSettings(_Section):
    """``session.*``: how the session log is kept."""

    sync: SyncPolicy = Field(
        default="commit",
        description=(
            "commit: the log is synced to disk at every commit point (each turn, each tool result, "
            "agent.end, session.end), so a power loss keeps every finished turn; release: only when "
            "the request ends (for a tmpfs or a throwaway run)"
        ),
    )


class TranscriptSettings(_Section):
    """``transcript.*``: the Claude Code transcript beside each session (``<id>.claude.jsonl``)."""

    claude_projects: bool = Field(
        default=False,
        description=(
            "also link each session's transcript into Claude Code's projects folder "
            "($CLAUDE_CONFIG_DIR or ~/.claude, then projects/<cwd>/<id>.jsonl), where ccusage and "
            "other Claude Code readers look. Off by default: Claude Code reads that folder too, "
            "so its --continue and /resume would offer aerix's sessions, and aerix does not write "
            "into another program's folder unless asked"
        ),
    )


class TuneSettings(_Section):
    """``tune.*``: ``aerix tune``."""

    member: str | None = Field(default=None, description="model of the reflection member; None = main")
    member_flags: MemberFlags = MemberFlags()
    sessions: int = Field(default=20, gt=0, description="newest sessions read by aerix tune")


class HookHandler(BaseModel):
    """One handler of a matcher group, Claude Code's shape. Unknown fields are kept and ignored,
    because Claude Code keeps adding them (``async``, ``statusMessage``, ``if`` …)."""

    model_config = ConfigDict(extra="allow", frozen=True, populate_by_name=True)

    type: str = "command"
    command: str | None = None
    timeout: float | None = Field(default=None, gt=0, description="seconds; None = the event's default")

    def timeout_for(self, event: str) -> float:
        """This handler's timeout in seconds: its own, else the event's default."""
        if self.timeout is not None:
            return self.timeout
        if event in bounds.HOOK_SHORT_TIMEOUT_EVENTS:
            return bounds.HOOK_SHORT_TIMEOUT_SECS
        return bounds.HOOK_TIMEOUT_SECS

    @model_validator(mode="after")
    def _command_needs_text(self) -> HookHandler:
        if self.type == "command" and not self.command:
            raise ValueError("a command hook needs a 'command'")
        return self


class HookMatcherGroup(BaseModel):
    """A matcher and its handlers: ``{"matcher": "Bash|Edit", "hooks": [...]}``."""

    model_config = ConfigDict(extra="allow", frozen=True)

    matcher: str = ""
    hooks: tuple[HookHandler, ...] = ()


#: ``hooks``: event name -> matcher groups, exactly Claude Code's settings shape.
HooksSettings = dict[str, tuple[HookMatcherGroup, ...]]


def hook_listing(hooks: HooksSettings, disabled: bool) -> tuple[str, ...]:
    """The configured hook events with their handler counts (``PreToolUse (2)``), for the
    startup block; nothing when hooks are disabled."""
    if disabled:
        return ()
    listing = []
    for event, groups in hooks.items():
        handlers = sum(len(group.hooks) for group in groups)
        if handlers:
            listing.append(f"{event} ({handlers})")
    return tuple(listing)


class PermissionSettings(BaseModel):
    """``permissions``: Claude Code's permission rules. ``deny`` holds (every file's rules
    apply, as with hooks); ``allow`` and ``ask`` are read and change nothing, because ``aerix -p``
    asks no permission. Claude Code's other keys (``defaultMode``, ``additionalDirectories``…)
    are kept and ignored."""

    model_config = ConfigDict(extra="allow", frozen=True)

    deny: tuple[str, ...] = Field(default=(), description="rules whose calls never run")
    allow: tuple[str, ...] = Field(default=(), description="accepted; aerix -p allows every call already")
    ask: tuple[str, ...] = Field(default=(), description="accepted; aerix -p asks no permission")

    @field_validator("deny")
    @classmethod
    def _readable_rules(cls, rules: tuple[str, ...]) -> tuple[str, ...]:
        for rule in rules:
            try:
                parse_rule(rule)
            except RuleError as exc:
                raise ValueError(str(exc)) from None
        return rules


class Settings(BaseModel):
    """Every setting. ``Settings()`` is the defaults."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    schema_url: str | None = Field(default=None, alias="$schema")
    profile: str = Field(default=DEFAULT_PROFILE, description="the profile whose prompts sessions read")
    pool: PoolSettings = PoolSettings()
    delegation: DelegationSettings = DelegationSettings()
    context: ContextSettings = ContextSettings()
    tune: TuneSettings = TuneSettings()
    session: SessionSettings = SessionSettings()
    transcript: TranscriptSettings = TranscriptSettings()
    hooks: HooksSettings = Field(default_factory=dict)
    disable_all_hooks: bool = Field(default=False, alias="disableAllHooks")
    #: Claude Code's key: plugin name (or ``name@marketplace``) -> enabled. A plugin found in a
    #: plugins folder is enabled unless this says false.
    enabled_plugins: dict[str, bool] = Field(default_factory=dict, alias="enabledPlugins")
    permissions: PermissionSettings = PermissionSettings()

    @field_validator("profile")
    @classmethod
    def _profile_name(cls, name: str) -> str:
        if not valid_profile_name(name):
            raise ValueError(f"{PROFILE_NAME_RULE} (got {name!r})")
        return name
