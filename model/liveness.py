"""Liveness over the checker's compact edge store: strongly connected components and fair cycles.

Why arrays and not networkx: the graphs of interest have millions of states; an iterative Tarjan with
``array`` columns for its numbering costs a few bytes a state, and only the non-trivial components are
ever materialised (a bounded model's graph is mostly acyclic). A test checks it against
``networkx.strongly_connected_components``.
"""

from __future__ import annotations

from array import array
from collections import deque
from collections.abc import Callable, Iterable


def _mask(n: int, nodes: Iterable[int] | bytearray) -> bytearray:
    if isinstance(nodes, bytearray) and len(nodes) == n:
        return nodes
    allowed = bytearray(n)
    for v in nodes:
        allowed[v] = 1
    return allowed


def strongly_connected_components(n: int, nodes: Iterable[int] | bytearray, succ: Callable[[int], Iterable[int]],
                                  nontrivial_only: bool = False) -> list[list[int]]:
    """Iterative Tarjan over the nodes given (a list, or a bytearray mask of length n); edges leaving that
    set are ignored. ``nontrivial_only``: skip single nodes without a self-loop."""
    allowed = _mask(n, nodes)
    index = array("i", [-1]) * n
    low = array("i", bytes(4 * n))
    on_stack = bytearray(n)
    stack: list[int] = []
    out: list[list[int]] = []
    counter = 0
    for root in range(n):
        if not allowed[root] or index[root] >= 0:
            continue
        work = [(root, iter(succ(root)))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack[root] = 1
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if not allowed[w]:
                    continue
                if index[w] < 0:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack[w] = 1
                    work.append((w, iter(succ(w))))
                    advanced = True
                    break
                if on_stack[w] and index[w] < low[v]:
                    low[v] = index[w]
            if advanced:
                continue
            work.pop()
            if work:
                u = work[-1][0]
                if low[v] < low[u]:
                    low[u] = low[v]
            if low[v] == index[v]:
                if stack[-1] == v:  # a single node: the common case, no list built
                    stack.pop()
                    on_stack[v] = 0
                    if not nontrivial_only or v in succ(v):
                        out.append([v])
                    continue
                comp = []
                while True:
                    w = stack.pop()
                    on_stack[w] = 0
                    comp.append(w)
                    if w == v:
                        break
                out.append(comp)
    return out


def fair_components(g, nodes: Iterable[int] | bytearray, fairness: bool) -> tuple[list[list[int]], int]:
    """The components a fair infinite run can stay in forever, and how many non-trivial ones there were.

    Strong fairness per class: a component is fair when every class enabled somewhere in it is also
    taken inside it. Otherwise the states enabling an untaken class are removed (a fair run cannot
    visit them infinitely often) and the rest is split again (Streett-style refinement).
    """
    n = len(g)

    def targets(v: int):
        return g.targets(v)

    first = strongly_connected_components(n, nodes, targets, nontrivial_only=True)
    count = len(first)
    work = list(first)
    fair: list[list[int]] = []
    while work:
        comp = work.pop()
        if not fairness:
            fair.append(comp)
            continue
        inside = set(comp)
        enabled: set = set()
        taken: set = set()
        for v in comp:
            for j, aid in g.edges(v):
                key = g.action_fair[aid]
                if key is None:
                    continue
                enabled.add(key)
                if j in inside:
                    taken.add(key)
        bad = enabled - taken
        if not bad:
            fair.append(comp)
            continue
        keep = [v for v in comp if not any(g.action_fair[aid] in bad for _, aid in g.edges(v))]
        if keep:
            work.extend(strongly_connected_components(n, keep, targets, nontrivial_only=True))
    return fair, count


def cycle_through(g, start: int, inside: set[int]) -> list[int]:
    """The shortest path start -> ... -> start inside a component (ids after start, ending with start)."""
    prev: dict[int, int] = {}
    queue = deque([start])
    while queue:
        v = queue.popleft()
        for j in g.targets(v):
            if j not in inside:
                continue
            if j == start:
                path = [start]
                while v != start:
                    path.append(v)
                    v = prev[v]
                path.reverse()
                return path
            if j not in prev:
                prev[j] = v
                queue.append(j)
    return [start]
