"""The HTTP front: Anthropic's Messages API and OpenAI's Chat Completions API over the pool.

``caldrix serve`` runs it as its own process, a protocol-2 client of the pool
(docs/http-front.md): whatever an HTTP client sends, the worst it can do is end this process,
never the pool or another client's generation. Only :mod:`caldrix.cli` imports this package,
and this package imports of caldrix only the protocol and what the protocol stands on.
"""
