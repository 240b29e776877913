"""Model files: what a reference names (a path, the embedded name, a URL, ``hf:``), getting it
into the cache, reading a GGUF header before loading, and sizing a member to fit memory."""
