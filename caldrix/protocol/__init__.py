"""caldrix-protocol 2: the frame codec, the message models, the role names and an anyio client.

This is the one caldrix package a client (aerix) imports. It loads no engine: importing it
never imports llama_cpp. The errors a client catches come from :mod:`caldrix.errors` and are
re-exported here.
"""

from caldrix.errors import (
    BadFrame,
    BadRequest,
    CaldrixError,
    ConstraintInvalid,
    ContextNotFound,
    ContextOverflow,
    DuplicateSegment,
    HandshakeRequired,
    InternalError,
    MemberExists,
    MemberNotFound,
    ModelNotFound,
    NoFit,
    PoolUnavailable,
    PrecheckFailed,
    ProtocolMismatch,
    SegmentNotFound,
    UnknownOp,
)
from caldrix.protocol.client import (
    ClientBounds,
    Generation,
    PoolClient,
    connect,
    error_from_reply,
)
from caldrix.protocol.framing import (
    MAX_FRAME_BYTES,
    NEED_MORE,
    PROTOCOL_VERSION,
    FrameDecoder,
    FrameMode,
    decode_payload,
    encode_frame,
)
from caldrix.protocol.messages import DoneFrame, Guard, ProgressFrame, TokenFrame
from caldrix.protocol.roles import DECISION_MEMBER, MAIN_MEMBER
from caldrix.protocol.transport import default_socket_path, unwritable_socket_folder

__all__ = [
    "DECISION_MEMBER",
    "MAIN_MEMBER",
    "MAX_FRAME_BYTES",
    "NEED_MORE",
    "PROTOCOL_VERSION",
    "BadFrame",
    "BadRequest",
    "CaldrixError",
    "ClientBounds",
    "ConstraintInvalid",
    "ContextNotFound",
    "ContextOverflow",
    "DoneFrame",
    "DuplicateSegment",
    "FrameDecoder",
    "FrameMode",
    "Generation",
    "Guard",
    "HandshakeRequired",
    "InternalError",
    "MemberExists",
    "MemberNotFound",
    "ModelNotFound",
    "NoFit",
    "PoolClient",
    "PoolUnavailable",
    "PrecheckFailed",
    "ProgressFrame",
    "ProtocolMismatch",
    "SegmentNotFound",
    "TokenFrame",
    "UnknownOp",
    "connect",
    "decode_payload",
    "default_socket_path",
    "encode_frame",
    "error_from_reply",
    "unwritable_socket_folder",
]
