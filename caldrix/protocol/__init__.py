"""caldrix-protocol 2: the frame codec, the message models, the role names and an anyio client.

This is the one caldrix package a client (aerix) imports. It loads no engine: importing it
never imports llama_cpp. The errors a client catches come from :mod:`caldrix.errors` and are
re-exported here.

Each name loads its module when it is first used (PEP 562's module ``__getattr__``): importing
the package, or a light part of it (``roles``, ``transport``), costs nothing of the message
models or the client, so ``caldrix --version`` and ``caldrix pool stop`` do not pay for them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from caldrix.protocol.lazy_names import lazy_names

if TYPE_CHECKING:
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
    from caldrix.protocol.transport import (
        default_socket_path,
        overlong_socket_path,
        unwritable_socket_folder,
    )

#: Where each name of ``__all__`` is defined.
_HOMES: dict[str, str] = {
    "BadFrame": "caldrix.errors",
    "BadRequest": "caldrix.errors",
    "CaldrixError": "caldrix.errors",
    "ConstraintInvalid": "caldrix.errors",
    "ContextNotFound": "caldrix.errors",
    "ContextOverflow": "caldrix.errors",
    "DuplicateSegment": "caldrix.errors",
    "HandshakeRequired": "caldrix.errors",
    "InternalError": "caldrix.errors",
    "MemberExists": "caldrix.errors",
    "MemberNotFound": "caldrix.errors",
    "ModelNotFound": "caldrix.errors",
    "NoFit": "caldrix.errors",
    "PoolUnavailable": "caldrix.errors",
    "PrecheckFailed": "caldrix.errors",
    "ProtocolMismatch": "caldrix.errors",
    "SegmentNotFound": "caldrix.errors",
    "UnknownOp": "caldrix.errors",
    "ClientBounds": "caldrix.protocol.client",
    "Generation": "caldrix.protocol.client",
    "PoolClient": "caldrix.protocol.client",
    "connect": "caldrix.protocol.client",
    "error_from_reply": "caldrix.protocol.client",
    "MAX_FRAME_BYTES": "caldrix.protocol.framing",
    "NEED_MORE": "caldrix.protocol.framing",
    "PROTOCOL_VERSION": "caldrix.protocol.framing",
    "FrameDecoder": "caldrix.protocol.framing",
    "FrameMode": "caldrix.protocol.framing",
    "decode_payload": "caldrix.protocol.framing",
    "encode_frame": "caldrix.protocol.framing",
    "DoneFrame": "caldrix.protocol.messages",
    "Guard": "caldrix.protocol.messages",
    "ProgressFrame": "caldrix.protocol.messages",
    "TokenFrame": "caldrix.protocol.messages",
    "DECISION_MEMBER": "caldrix.protocol.roles",
    "MAIN_MEMBER": "caldrix.protocol.roles",
    "default_socket_path": "caldrix.protocol.transport",
    "overlong_socket_path": "caldrix.protocol.transport",
    "unwritable_socket_folder": "caldrix.protocol.transport",
}


__getattr__ = lazy_names(__name__, _HOMES)


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
    "overlong_socket_path",
    "unwritable_socket_folder",
]
