"""The prefix store: a member's KV snapshots keyed by the token ids they hold, the trie that
finds the longest stored prefix, and the cost model that decides whether resuming pays."""
