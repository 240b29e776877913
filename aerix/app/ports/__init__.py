"""The ports the application layer talks to, and every value that crosses them.

Adapters implement the Protocols; ``aerix.wiring`` hands the real ones to the use cases. Tests
may use small in-memory versions for pure logic, and the real adapters where a test claims to
test them. Nothing from a third-party library appears in a port's signature.

    agents    Caller, Delegator, ToolHooks, AgentLifecycle (what the loop hands delegation; where agent hooks
              fire)
    pool      PoolPort, PoolStarter, OpenedPool, and the pool's figures (MemberInfo, ContextCounts,
              GenerationDone …)
    sessions  SessionStorage (SessionLog, ProjectionFiles, SessionSpool), EventRecorder, Clock,
              SessionRef, SessionSummary, ReplaceOutcome, ImportPlan, PlannedEvent, ClaudeSessionSource,
              FoundTranscripts
    project   ProjectSource, Project, PluginInfo, SkillSource, AgentDefinitionSource,
              AgentDefinition, PromptSource
    tools     ToolRunner, ToolRunnerFactory, JobsPort, SpoolWriter, ResultTarget
    diffs     DiffSource, DiffFigures
    hooks     HookRunner, HookRunnerFactory, TranscriptSync
    request   RequestObserver, RequestPiece, RequestResult, RequestUsage; the views an observer
              shows (LiveProjection, StreamView); RequestControls,
              CancelSignal, PlanGate, PlanReview (how the screen steers a running request)
    stream    --input-format stream-json: UserPrompt, ControlRequest, BadLine (StreamItem),
              StreamOutput
    screen    ConversationScreen, Opening, StartupNote, Prompt, Command, the live figures'
              shapes (StatusView, StatusFactory …)
    profiles  ProfileStore, ProfileRepository, ProfileCommit, TextEditor, Edited, and what the
              profile commands report (ProfileObserver, Revision, Refused, TuneReport …)

Each name loads its module when it is first used (PEP 562's module ``__getattr__``), as
``caldrix.protocol``'s do: a command loads the port modules whose names it uses, and a name used
only in annotations is imported for the type checker alone. So ``aerix -p`` makes none of the
screen's values or of what the profile commands report (a frozen dataclass is about 0.4 ms to
make on Python 3.11, every generated method compiled on its own).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from caldrix.protocol.lazy_names import lazy_names

if TYPE_CHECKING:
    from aerix.app.ports.agents import AgentLifecycle, Caller, Delegator, ToolHooks
    from aerix.app.ports.diffs import DiffFigures, DiffSource
    from aerix.app.ports.hooks import HookRunner, HookRunnerFactory, TranscriptSync
    from aerix.app.ports.pool import (
        ContextCounts,
        ContextEditOp,
        GenerationDone,
        GenerationTimings,
        MemberInfo,
        OnProgress,
        OnToken,
        OpenedPool,
        PoolPort,
        PoolStarter,
        SegmentAppend,
        SegmentCount,
        SegmentSpec,
        TokenLogprob,
    )
    from aerix.app.ports.profiles import (
        BranchView,
        Edited,
        EditOutcome,
        ProfileCommit,
        ProfileObserver,
        ProfileRepository,
        ProfileStore,
        ProfileView,
        Refused,
        Revision,
        SyncReport,
        TextEditor,
        TuneReport,
    )
    from aerix.app.ports.project import (
        AgentDefinition,
        AgentDefinitionSource,
        PluginInfo,
        Project,
        ProjectSource,
        PromptSource,
        SkillSource,
    )
    from aerix.app.ports.request import (
        CancelSignal,
        LiveProjection,
        PlanGate,
        PlanReview,
        RequestControls,
        RequestObserver,
        RequestPiece,
        RequestResult,
        RequestUsage,
        StreamView,
    )
    from aerix.app.ports.screen import (
        Command,
        ContextFigures,
        ConversationScreen,
        NoteLevel,
        Opening,
        Prompt,
        StartupNote,
        StatsFigures,
        StatusFactory,
        StatusView,
        UserInput,
    )
    from aerix.app.ports.sessions import (
        ClaudeSessionSource,
        Clock,
        EventRecorder,
        FoundTranscripts,
        ImportPlan,
        PlannedEvent,
        ProjectionFiles,
        ReplaceOutcome,
        SessionLog,
        SessionRef,
        SessionSpool,
        SessionStorage,
        SessionSummary,
    )
    from aerix.app.ports.stream import BadLine, ControlRequest, StreamItem, StreamOutput, UserPrompt
    from aerix.app.ports.tools import (
        JobOutcomeLike,
        JobReportLike,
        JobsPort,
        ResultTarget,
        SpoolWriter,
        ToolRunner,
        ToolRunnerFactory,
    )

_HOMES: dict[str, str] = {
    "AgentDefinition": "aerix.app.ports.project",
    "AgentDefinitionSource": "aerix.app.ports.project",
    "AgentLifecycle": "aerix.app.ports.agents",
    "BadLine": "aerix.app.ports.stream",
    "BranchView": "aerix.app.ports.profiles",
    "Caller": "aerix.app.ports.agents",
    "CancelSignal": "aerix.app.ports.request",
    "ClaudeSessionSource": "aerix.app.ports.sessions",
    "Clock": "aerix.app.ports.sessions",
    "Command": "aerix.app.ports.screen",
    "ContextCounts": "aerix.app.ports.pool",
    "ContextEditOp": "aerix.app.ports.pool",
    "ContextFigures": "aerix.app.ports.screen",
    "ControlRequest": "aerix.app.ports.stream",
    "ConversationScreen": "aerix.app.ports.screen",
    "Delegator": "aerix.app.ports.agents",
    "DiffFigures": "aerix.app.ports.diffs",
    "DiffSource": "aerix.app.ports.diffs",
    "EditOutcome": "aerix.app.ports.profiles",
    "Edited": "aerix.app.ports.profiles",
    "EventRecorder": "aerix.app.ports.sessions",
    "FoundTranscripts": "aerix.app.ports.sessions",
    "GenerationDone": "aerix.app.ports.pool",
    "GenerationTimings": "aerix.app.ports.pool",
    "HookRunner": "aerix.app.ports.hooks",
    "HookRunnerFactory": "aerix.app.ports.hooks",
    "ImportPlan": "aerix.app.ports.sessions",
    "JobOutcomeLike": "aerix.app.ports.tools",
    "JobReportLike": "aerix.app.ports.tools",
    "JobsPort": "aerix.app.ports.tools",
    "LiveProjection": "aerix.app.ports.request",
    "MemberInfo": "aerix.app.ports.pool",
    "NoteLevel": "aerix.app.ports.screen",
    "OnProgress": "aerix.app.ports.pool",
    "OnToken": "aerix.app.ports.pool",
    "OpenedPool": "aerix.app.ports.pool",
    "Opening": "aerix.app.ports.screen",
    "PlanGate": "aerix.app.ports.request",
    "PlanReview": "aerix.app.ports.request",
    "PlannedEvent": "aerix.app.ports.sessions",
    "PluginInfo": "aerix.app.ports.project",
    "PoolPort": "aerix.app.ports.pool",
    "PoolStarter": "aerix.app.ports.pool",
    "ProfileCommit": "aerix.app.ports.profiles",
    "ProfileObserver": "aerix.app.ports.profiles",
    "ProfileRepository": "aerix.app.ports.profiles",
    "ProfileStore": "aerix.app.ports.profiles",
    "ProfileView": "aerix.app.ports.profiles",
    "Project": "aerix.app.ports.project",
    "ProjectSource": "aerix.app.ports.project",
    "ProjectionFiles": "aerix.app.ports.sessions",
    "Prompt": "aerix.app.ports.screen",
    "PromptSource": "aerix.app.ports.project",
    "Refused": "aerix.app.ports.profiles",
    "ReplaceOutcome": "aerix.app.ports.sessions",
    "RequestControls": "aerix.app.ports.request",
    "RequestObserver": "aerix.app.ports.request",
    "RequestPiece": "aerix.app.ports.request",
    "RequestResult": "aerix.app.ports.request",
    "RequestUsage": "aerix.app.ports.request",
    "ResultTarget": "aerix.app.ports.tools",
    "Revision": "aerix.app.ports.profiles",
    "SegmentAppend": "aerix.app.ports.pool",
    "SegmentCount": "aerix.app.ports.pool",
    "SegmentSpec": "aerix.app.ports.pool",
    "SessionLog": "aerix.app.ports.sessions",
    "SessionRef": "aerix.app.ports.sessions",
    "SessionSpool": "aerix.app.ports.sessions",
    "SessionStorage": "aerix.app.ports.sessions",
    "SessionSummary": "aerix.app.ports.sessions",
    "SkillSource": "aerix.app.ports.project",
    "SpoolWriter": "aerix.app.ports.tools",
    "StartupNote": "aerix.app.ports.screen",
    "StatsFigures": "aerix.app.ports.screen",
    "StatusFactory": "aerix.app.ports.screen",
    "StatusView": "aerix.app.ports.screen",
    "StreamItem": "aerix.app.ports.stream",
    "StreamOutput": "aerix.app.ports.stream",
    "StreamView": "aerix.app.ports.request",
    "SyncReport": "aerix.app.ports.profiles",
    "TextEditor": "aerix.app.ports.profiles",
    "TokenLogprob": "aerix.app.ports.pool",
    "ToolHooks": "aerix.app.ports.agents",
    "ToolRunner": "aerix.app.ports.tools",
    "ToolRunnerFactory": "aerix.app.ports.tools",
    "TranscriptSync": "aerix.app.ports.hooks",
    "TuneReport": "aerix.app.ports.profiles",
    "UserInput": "aerix.app.ports.screen",
    "UserPrompt": "aerix.app.ports.stream",
}


__getattr__ = lazy_names(__name__, _HOMES)


__all__ = [
    "AgentDefinition",
    "AgentDefinitionSource",
    "AgentLifecycle",
    "BadLine",
    "BranchView",
    "Caller",
    "CancelSignal",
    "ClaudeSessionSource",
    "Clock",
    "Command",
    "ContextCounts",
    "ContextEditOp",
    "ContextFigures",
    "ControlRequest",
    "ConversationScreen",
    "Delegator",
    "DiffFigures",
    "DiffSource",
    "EditOutcome",
    "Edited",
    "EventRecorder",
    "FoundTranscripts",
    "GenerationDone",
    "GenerationTimings",
    "HookRunner",
    "HookRunnerFactory",
    "ImportPlan",
    "JobOutcomeLike",
    "JobReportLike",
    "JobsPort",
    "LiveProjection",
    "MemberInfo",
    "NoteLevel",
    "OnProgress",
    "OnToken",
    "OpenedPool",
    "Opening",
    "PlanGate",
    "PlanReview",
    "PlannedEvent",
    "PluginInfo",
    "PoolPort",
    "PoolStarter",
    "ProfileCommit",
    "ProfileObserver",
    "ProfileRepository",
    "ProfileStore",
    "ProfileView",
    "Project",
    "ProjectSource",
    "ProjectionFiles",
    "Prompt",
    "PromptSource",
    "Refused",
    "ReplaceOutcome",
    "RequestControls",
    "RequestObserver",
    "RequestPiece",
    "RequestResult",
    "RequestUsage",
    "ResultTarget",
    "Revision",
    "SegmentAppend",
    "SegmentCount",
    "SegmentSpec",
    "SessionLog",
    "SessionRef",
    "SessionSpool",
    "SessionStorage",
    "SessionSummary",
    "SkillSource",
    "SpoolWriter",
    "StartupNote",
    "StatsFigures",
    "StatusFactory",
    "StatusView",
    "StreamItem",
    "StreamOutput",
    "StreamView",
    "SyncReport",
    "TextEditor",
    "TokenLogprob",
    "ToolHooks",
    "ToolRunner",
    "ToolRunnerFactory",
    "TranscriptSync",
    "TuneReport",
    "UserInput",
    "UserPrompt",
]
