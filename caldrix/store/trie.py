"""A radix tree over token ids: which stored token sequences share the longest prefix
with a prompt.

Edges carry runs of token ids (path compression), so a 2,000-token snapshot costs a handful
of nodes, and a lookup walks the prompt once instead of comparing it with every entry. A
value stored under a sequence serves every shorter prefix of that sequence too, so a lookup
reports how deep the prompt reaches into the tree and every value stored at or below that
point — each of them holds the matched prefix.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

V = TypeVar("V")


@dataclass(eq=False)
class _Node(Generic[V]):
    label: tuple[int, ...]
    """The token run on the edge from the parent to this node."""
    parent: _Node[V] | None = None
    children: dict[int, _Node[V]] = field(default_factory=dict)
    value: V | None = None
    has_value: bool = False


@dataclass(frozen=True)
class PrefixMatch(Generic[V]):
    """How far a query reaches into the tree, and the values that hold that prefix."""

    depth: int
    """The length of the longest prefix of the query that some stored sequence starts with."""
    holders: tuple[V, ...]
    """The values stored at or below that point: each one's sequence starts with
    ``query[:depth]``. Empty when ``depth`` is 0."""


def _common_length(a: Sequence[int], a_start: int, b: Sequence[int]) -> int:
    """How many leading tokens of ``b`` equal ``a[a_start:]``."""
    limit = min(len(a) - a_start, len(b))
    n = 0
    while n < limit and a[a_start + n] == b[n]:
        n += 1
    return n


def _parent_of(node: _Node[V]) -> _Node[V]:
    if node.parent is None:
        raise RuntimeError("the trie's root has no parent")  # only reached through a bug
    return node.parent


class TokenTrie(Generic[V]):
    """Values keyed by token-id sequences, with longest-shared-prefix lookup."""

    def __init__(self) -> None:
        self._root: _Node[V] = _Node(label=())
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def insert(self, tokens: Sequence[int], value: V) -> None:
        """Store ``value`` under ``tokens``, replacing any value stored under the same tokens."""
        node = self._root
        pos = 0
        while pos < len(tokens):
            child = node.children.get(tokens[pos])
            if child is None:
                leaf: _Node[V] = _Node(label=tuple(tokens[pos:]), parent=node)
                node.children[tokens[pos]] = leaf
                node = leaf
                pos = len(tokens)
                break
            shared = _common_length(tokens, pos, child.label)
            if shared < len(child.label):
                child = self._split(child, shared)
            node = child
            pos += shared
        if not node.has_value:
            self._size += 1
        node.value = value
        node.has_value = True

    def remove(self, tokens: Sequence[int]) -> V | None:
        """Drop the value stored under exactly ``tokens``; return it, or ``None`` if absent."""
        node = self._find_exact(tokens)
        if node is None or not node.has_value:
            return None
        value = node.value
        node.value = None
        node.has_value = False
        self._size -= 1
        self._prune(node)
        return value

    def get(self, tokens: Sequence[int]) -> V | None:
        """The value stored under exactly ``tokens``, if any."""
        node = self._find_exact(tokens)
        return node.value if node is not None and node.has_value else None

    def longest_prefix(self, query: Sequence[int]) -> PrefixMatch[V]:
        """The longest prefix of ``query`` held by a stored sequence, and its holders."""
        node, depth = self._descend(query)
        if depth == 0:
            return PrefixMatch(depth=0, holders=())
        return PrefixMatch(depth=depth, holders=tuple(self._values_below(node)))

    def values_along(self, query: Sequence[int]) -> list[V]:
        """Values whose whole sequence is a prefix of ``query`` (shortest first)."""
        found: list[V] = []
        node = self._root
        pos = 0
        while True:
            if node.has_value:
                found.append(node.value)  # type: ignore[arg-type]
            if pos >= len(query):
                return found
            child = node.children.get(query[pos])
            if child is None or _common_length(query, pos, child.label) < len(child.label):
                return found
            node = child
            pos += len(child.label)

    def _descend(self, query: Sequence[int]) -> tuple[_Node[V], int]:
        """The deepest node reached by ``query`` (possibly part-way along its edge) and the
        number of query tokens matched."""
        node = self._root
        pos = 0
        while pos < len(query):
            child = node.children.get(query[pos])
            if child is None:
                break
            shared = _common_length(query, pos, child.label)
            node = child
            pos += shared
            if shared < len(child.label):
                break
        return node, pos

    def _values_below(self, node: _Node[V]) -> Iterator[V]:
        stack = [node]
        while stack:
            current = stack.pop()
            if current.has_value:
                yield current.value  # type: ignore[misc]
            stack.extend(current.children.values())

    def _find_exact(self, tokens: Sequence[int]) -> _Node[V] | None:
        node = self._root
        pos = 0
        while pos < len(tokens):
            child = node.children.get(tokens[pos])
            if child is None or _common_length(tokens, pos, child.label) < len(child.label):
                return None
            node = child
            pos += len(child.label)
        return node

    def _split(self, child: _Node[V], at: int) -> _Node[V]:
        """Cut ``child``'s edge after ``at`` tokens; return the new middle node."""
        parent = _parent_of(child)
        middle: _Node[V] = _Node(label=child.label[:at], parent=parent)
        parent.children[middle.label[0]] = middle
        child.label = child.label[at:]
        child.parent = middle
        middle.children[child.label[0]] = child
        return middle

    def _prune(self, node: _Node[V]) -> None:
        """Remove valueless leaves upward and merge single-child chains, keeping the tree
        compressed."""
        while node is not self._root and not node.has_value and not node.children:
            parent = _parent_of(node)
            del parent.children[node.label[0]]
            node = parent
        if node is not self._root and not node.has_value and len(node.children) == 1:
            (only,) = node.children.values()
            parent = _parent_of(node)
            only.label = node.label + only.label
            only.parent = parent
            parent.children[only.label[0]] = only
