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
"""

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
