"""caldrix: the model-pool daemon behind Aerix.

It holds loaded models (members) behind a Unix socket and speaks caldrix-protocol version 2.
Only :mod:`caldrix.protocol` is meant to be imported by clients.
"""

__version__ = "0.1.0"
