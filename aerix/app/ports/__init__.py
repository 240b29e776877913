"""The ports the application layer talks to, and every value that crosses them.

Adapters implement the Protocols; ``aerix.wiring`` hands the real ones to the use cases. Tests
may use small in-memory versions for pure logic, and the real adapters where a test claims to
test them. Nothing from a third-party library appears in a port's signature.

    agents    Caller, Delegator, ToolHooks, AgentLifecycle (what the loop hands delegation; where
              agent hooks fire)
    pool      PoolPort (PoolMembers, PoolContexts), PoolStarter, OpenedPool, and the pool's
              figures (MemberInfo, ContextCounts, GenerationDone …)
    sessions  SessionStorage (SessionCatalog, SessionLog, ProjectionFiles, SessionSpool),
              EventRecorder, Clock, SessionRef, SessionSummary, ReplaceOutcome, ImportPlan,
              PlannedEvent, ClaudeSessionSource, FoundTranscripts
    project   ProjectSource, Project, PluginInfo, SkillSource, AgentDefinitionSource,
              AgentDefinition, PromptSource
    tools     ToolRunner, ToolRunnerFactory, JobsPort, SpoolWriter, ResultTarget
    diffs     DiffSource, DiffFigures
    hooks     HookRunner, HookRunnerFactory, TranscriptSync
    request   RequestObserver, RequestPiece, RequestResult, RequestUsage; the views an observer
              shows (LiveProjection, StreamView); RequestControls, CancelSignal, PlanGate,
              PlanReview (how the screen steers a running request)
    stream    --input-format stream-json: UserPrompt, ControlRequest, BadLine (StreamItem),
              StreamOutput
    screen    ConversationScreen (ScreenInput, RequestDisplay, SessionDisplay), Opening,
              StartupNote, Prompt, Command, the live figures' shapes (StatusView, StatusNow,
              StatusFactory …)
    profiles  ProfileStore, ProfileRepository (ProfileRefs, ProfileObjects), ProfileCommit,
              TextEditor, Edited, and what the profile commands report (ProfileObserver,
              Revision, Refused, TuneReport …)

A port serves one job and has at most 8 members, counting those it inherits
(``tests/aerix/test_port_width.py``); a use case that needs several jobs holds several ports
(``SessionStorage``, ``ConversationScreen``, ``ProfileRepository``, ``PoolPort``).

The package exports nothing: a name is imported from its module (``from aerix.app.ports.pool
import PoolPort``), the one place it is listed, and a command loads only the port modules it uses
(``aerix -p`` makes none of the screen's values nor what the profile commands report: a frozen
dataclass is about 0.4 ms to make on Python 3.11).
"""
