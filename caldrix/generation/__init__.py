"""One generation over any engine: the chat template and per-segment token counts, the decoding
loop, constraint masks, sampling, and the text stream that turns token bytes into UTF-8 pieces."""
