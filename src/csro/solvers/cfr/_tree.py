"""The game tree of an OpenSpiel game as flat NumPy arrays, built once per game string.

Layout (see ``GameTree``):

1. Walk the tree depth first, as OpenSpiel's Python ``CFRSolver`` does (chance outcomes and
   legal actions in OpenSpiel's order). Each player's information sets are numbered in the
   order this walk first meets them; that order is the *canonical infoset order* that
   order-dependent hooks (VAD-CFR's running EWMA) see.
2. Renumber the nodes breadth first by a stable sort on depth. Depth-first order restricted
   to one depth is already sorted by (parent, action slot), so every node's children are
   contiguous on the next level, in action order. An iteration then works level by level
   on slices: one ``np.bincount`` sums children into parents, with no Python per node.
3. For every decision node and every player q, ``seq[q]`` is the index of q's last edge on
   the path (or "none"). q's reach probability at a node is then a gather from q's reach at
   its own edges, which is computed over q's edges only, grouped by how many own edges
   precede them. This needs no perfect recall (Goofspiel's information states merge own
   histories, as OpenSpiel's CFR allows).

Simultaneous-move games go through ``pyspiel.convert_to_turn_based``; the tree is the one of
the converted game (as OpenSpiel's own CFR solvers require). Built trees are cached per game
string for the life of the process (``load_tree``).
"""

from __future__ import annotations

import array
import contextlib
import dataclasses
import functools
import logging
import os
import sys
import tempfile
import time

import numpy as np
import pyspiel

from csro.errors import GameError

log = logging.getLogger(__name__)

__all__ = ["GameTree", "PlayerInfosets", "Level", "load_game", "load_tree", "build_tree"]


@dataclasses.dataclass(frozen=True, eq=False)
class Level:
    """One level of the breadth-first tree: the nodes at depth d and their children.

    Attributes:
      child_start, child_stop: the slice of node ids at depth d + 1 (all children of depth d).
      parents: ids of the non-terminal nodes at depth d, increasing (each has >= 1 child).
      offsets: for ``np.add.reduceat`` over the child slice: where each parent's children start.
      labels: per child, the position of its parent in ``parents`` (for ``np.bincount``,
        which sums each parent's children in action order, as OpenSpiel's CFR does).
    """

    child_start: int
    child_stop: int
    parents: np.ndarray
    offsets: np.ndarray
    labels: np.ndarray


@dataclasses.dataclass(frozen=True, eq=False)
class PlayerInfosets:
    """One player's information sets and the tree positions where that player acts.

    Rows of every ``(num_infosets, max_actions)`` array are infosets in canonical order;
    column j is the j-th legal action (OpenSpiel order); columns past ``num_actions`` are
    padding (``legal`` False, action id -1).

    Attributes:
      keys: the information-state strings, canonical order.
      actions: OpenSpiel action ids, padded with -1.
      legal: the mask of real (infoset, action) slots.
      num_actions: legal actions per infoset.
      nodes: ids of this player's decision nodes, increasing.
      node_infoset: the infoset row of each node in ``nodes``.
      edge_child: ids of the children of ``nodes`` (the player's edges), increasing.
      edge_parent: position in ``nodes`` of each edge's parent.
      edge_sa: flat (infoset, slot) index, ``row * max_actions + slot``, of each edge.
      edge_parent_node: the node id of each edge's parent.
      reach_sa, reach_prev, reach_groups: the own-reach layout. Position k stands for one
        edge (edges sorted by how many own edges lie on their path, so ``reach_groups`` are
        consecutive slices); ``reach_sa[k]`` is its (infoset, slot) index and
        ``reach_prev[k]`` the position of the player's previous edge on the path, or
        ``num_edges`` ("no own edge yet", whose reach is 1).
      level_edges: for each tree level d, the slice ``[a, b)`` of edges whose parent is at d.
      histories: number of decision nodes (histories) in each infoset.
    """

    player: int
    keys: tuple[str, ...]
    actions: np.ndarray
    legal: np.ndarray
    num_actions: np.ndarray
    nodes: np.ndarray
    node_infoset: np.ndarray
    edge_child: np.ndarray
    edge_parent: np.ndarray
    edge_sa: np.ndarray
    edge_parent_node: np.ndarray
    reach_sa: np.ndarray
    reach_prev: np.ndarray
    reach_groups: tuple[tuple[int, int], ...]
    level_edges: tuple[tuple[int, int], ...]
    histories: np.ndarray

    @property
    def num_infosets(self) -> int:
        return len(self.keys)

    @property
    def max_actions(self) -> int:
        return self.actions.shape[1]

    @property
    def num_edges(self) -> int:
        return len(self.edge_child)


@dataclasses.dataclass(frozen=True, eq=False)
class GameTree:
    """The full game tree in breadth-first order (node 0 is the root).

    Attributes:
      game_string: the string the tree was built from.
      game: the OpenSpiel game the tree describes (turn-based if the original is simultaneous).
      num_players: N.
      kind: per node, the acting player (0..N-1), ``N`` for chance, ``N + 1`` for terminal.
      parent: per node, its parent id (-1 for the root).
      edge_owner: per node, who chose the edge into it (player, ``N`` chance, -1 root).
      chance_prob: per node, the chance probability of its incoming edge (1 if not chance).
      chance_reach: per node, the product of chance probabilities on its path.
      depth_start: node ids at depth d are ``depth_start[d]:depth_start[d + 1]``.
      levels: the ``Level`` of each depth that has children.
      terminals: ids of the terminal nodes; ``utilities[k]`` are the returns at ``terminals[k]``.
      players: the ``PlayerInfosets`` of each player.
      seq: ``seq[p][q][i]`` is the own-reach position (see ``PlayerInfosets``) of player q's
        last edge above the i-th node of ``players[p].nodes`` (``players[q].num_edges`` if
        none), for the reach gathers.
      level_aligned: whether every infoset's histories lie at one depth (needed by the
        vectorised best response; otherwise NashConv falls back to OpenSpiel).
      build_seconds: wall time of the build.
    """

    game_string: str
    game: pyspiel.Game
    num_players: int
    kind: np.ndarray
    parent: np.ndarray
    edge_owner: np.ndarray
    chance_prob: np.ndarray
    chance_reach: np.ndarray
    depth_start: np.ndarray
    levels: tuple[Level, ...]
    terminals: np.ndarray
    utilities: np.ndarray
    players: tuple[PlayerInfosets, ...]
    seq: tuple[tuple[np.ndarray, ...], ...]
    level_aligned: bool
    build_seconds: float

    @property
    def num_nodes(self) -> int:
        return len(self.kind)

    @property
    def num_infosets(self) -> int:
        return sum(p.num_infosets for p in self.players)

    @property
    def chance(self) -> int:
        return self.num_players

    @property
    def terminal(self) -> int:
        return self.num_players + 1

    def nbytes(self) -> int:
        """Approximate memory held by the tree's arrays."""
        total = 0
        for value in vars(self).values():
            if isinstance(value, np.ndarray):
                total += value.nbytes
        for level in self.levels:
            total += level.parents.nbytes + level.offsets.nbytes + level.labels.nbytes
        for p in self.players:
            total += sum(v.nbytes for v in vars(p).values() if isinstance(v, np.ndarray))
        for per_p in self.seq:
            total += sum(a.nbytes for a in per_p)
        return total

    def summary(self) -> dict:
        """Sizes for docs and logs."""
        return {
            "game": self.game_string,
            "players": self.num_players,
            "nodes": self.num_nodes,
            "terminals": len(self.terminals),
            "infosets": self.num_infosets,
            "depth": len(self.depth_start) - 2,
            "max_actions": max(p.max_actions for p in self.players),
            "megabytes": round(self.nbytes() / 2**20, 1),
            "build_seconds": round(self.build_seconds, 2),
        }


def load_game(game_string: str, capture_errors: bool = True) -> pyspiel.Game:
    """Load an OpenSpiel game for CFR, converting simultaneous-move games to turn-based.

    Raises GameError for an unknown or malformed game string, or a game CFR cannot run on.
    ``capture_errors=False`` skips capturing OpenSpiel's C++ stderr, which needs a temporary
    file (the sandbox of a discovery run may write none; its games are validated beforehand).
    """
    if not isinstance(game_string, str) or not game_string.strip():
        raise GameError(f"game string must be a non-empty string, got {game_string!r}")
    name = game_string.split("(", 1)[0].strip()
    if name not in pyspiel.registered_names():
        raise GameError(f"unknown OpenSpiel game {name!r} in game string {game_string!r}")
    with (_captured_stderr() if capture_errors else contextlib.nullcontext(lambda: "")) as captured:
        try:
            game = pyspiel.load_game(game_string)
            error = None
        except pyspiel.SpielError as exc:
            error = str(exc)
    if error is not None:
        text = (error.strip() or captured()).strip()
        first = text.splitlines()[0] if text else "unknown error"
        first = first.removeprefix("OpenSpiel exception:").strip()
        raise GameError(f"cannot load game {game_string!r}: {first}")
    gtype = game.get_type()
    if gtype.dynamics == pyspiel.GameType.Dynamics.SIMULTANEOUS:
        game = pyspiel.convert_to_turn_based(game)
        gtype = game.get_type()
    elif gtype.dynamics != pyspiel.GameType.Dynamics.SEQUENTIAL:
        raise GameError(f"game {game_string!r}: dynamics {gtype.dynamics} not supported")
    if not gtype.provides_information_state_string:
        raise GameError(f"game {game_string!r} has no information-state strings; CFR needs them")
    if gtype.chance_mode == pyspiel.GameType.ChanceMode.SAMPLED_STOCHASTIC:
        raise GameError(f"game {game_string!r} has sampled chance; exact CFR needs explicit chance")
    if not 1 <= game.num_players() <= 8:
        raise GameError(f"game {game_string!r} has {game.num_players()} players; 1-8 supported")
    return game


@contextlib.contextmanager
def _captured_stderr():
    """Capture file descriptor 2 (OpenSpiel's C++ side prints its errors there)."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):  # no real fd 2 (e.g. some embedded runners)
        yield lambda: ""
        return
    with tempfile.TemporaryFile(mode="w+b") as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield lambda: (tmp.seek(0), tmp.read().decode("utf-8", "replace"))[1]
        finally:
            os.dup2(saved, 2)
            os.close(saved)


@functools.lru_cache(maxsize=16)
def load_tree(game_string: str) -> GameTree:
    """The cached ``GameTree`` of a game string (built on first use in this process)."""
    return build_tree(game_string)


def build_tree(game_string: str, max_nodes: int = 20_000_000, capture_errors: bool = True) -> GameTree:
    """Build the flat tree of ``game_string`` (uncached; prefer ``load_tree``)."""
    start = time.perf_counter()
    game = load_game(game_string, capture_errors)
    n_players = game.num_players()
    chance_kind, terminal_kind = n_players, n_players + 1

    # --- 1. depth-first walk -------------------------------------------------------------
    parent = array.array("q")
    slot = array.array("q")
    depth = array.array("q")
    kind = array.array("b")
    infoset = array.array("q")  # per node: infoset row for decision nodes, else -1
    cprob = array.array("d")
    utils = array.array("d")
    keys: list[dict[str, int]] = [{} for _ in range(n_players)]
    actions: list[list[list[int]]] = [[] for _ in range(n_players)]

    stack = [(game.new_initial_state(), -1, 0, 0, 1.0)]
    while stack:
        state, par, slot_i, dep, prob = stack.pop()
        node = len(kind)
        if node >= max_nodes:
            raise GameError(f"game {game_string!r} has more than {max_nodes} nodes; too large")
        parent.append(par)
        slot.append(slot_i)
        depth.append(dep)
        cprob.append(prob)
        if state.is_terminal():
            kind.append(terminal_kind)
            infoset.append(-1)
            utils.extend(state.returns())
            continue
        if state.is_chance_node():
            kind.append(chance_kind)
            infoset.append(-1)
            outcomes = state.chance_outcomes()
            for j in range(len(outcomes) - 1, -1, -1):
                a, p = outcomes[j]
                stack.append((state.child(a), node, j, dep + 1, p))
            continue
        player = state.current_player()
        if player < 0:
            raise GameError(f"game {game_string!r}: unsupported node type at {state}")
        kind.append(player)
        legal = state.legal_actions()
        key = state.information_state_string(player)
        row = keys[player].get(key)
        if row is None:
            row = keys[player][key] = len(actions[player])
            actions[player].append(legal)
        elif actions[player][row] != legal:
            raise GameError(
                f"game {game_string!r}: information state {key!r} has different legal actions "
                "in different histories"
            )
        infoset.append(row)
        for j in range(len(legal) - 1, -1, -1):
            stack.append((state.child(legal[j]), node, j, dep + 1, 1.0))

    n = len(kind)
    dfs_parent = np.frombuffer(parent, dtype=np.int64)
    dfs_slot = np.frombuffer(slot, dtype=np.int64)
    dfs_depth = np.frombuffer(depth, dtype=np.int64)
    dfs_kind = np.frombuffer(kind, dtype=np.int8)
    dfs_infoset = np.frombuffer(infoset, dtype=np.int64)
    dfs_cprob = np.frombuffer(cprob, dtype=np.float64)
    utilities = np.frombuffer(utils, dtype=np.float64).reshape(-1, n_players).copy()

    # --- 2. breadth-first renumbering ----------------------------------------------------
    perm = np.argsort(dfs_depth, kind="stable")  # new id -> dfs id
    new_of_dfs = np.empty(n, dtype=np.int64)
    new_of_dfs[perm] = np.arange(n)
    kind_a = dfs_kind[perm].copy()
    par_dfs = dfs_parent[perm]
    parent_a = np.where(par_dfs >= 0, new_of_dfs[np.maximum(par_dfs, 0)], -1)
    slot_a = dfs_slot[perm]
    depth_a = dfs_depth[perm]
    infoset_a = dfs_infoset[perm]
    chance_prob = dfs_cprob[perm].copy()
    terminal_dfs = np.flatnonzero(dfs_kind == terminal_kind)  # utilities are in dfs order
    term_new = new_of_dfs[terminal_dfs]
    order = np.argsort(term_new)
    terminals = term_new[order]
    utilities = utilities[order]

    edge_owner = np.full(n, -1, dtype=np.int8)
    edge_owner[1:] = kind_a[parent_a[1:]]
    max_depth = int(depth_a[-1])
    depth_start = np.searchsorted(depth_a, np.arange(max_depth + 2)).astype(np.int64)

    levels = []
    for d in range(max_depth):
        cs, ce = int(depth_start[d + 1]), int(depth_start[d + 2])
        par = parent_a[cs:ce]
        offsets = np.flatnonzero(np.r_[True, par[1:] != par[:-1]]).astype(np.intp)
        labels = np.cumsum(np.r_[False, par[1:] != par[:-1]]).astype(np.intp)
        levels.append(Level(cs, ce, par[offsets].astype(np.intp), offsets, labels))

    chance_reach = np.ones(n)
    for lv in levels:
        sl = slice(lv.child_start, lv.child_stop)
        chance_reach[sl] = chance_reach[parent_a[sl]] * chance_prob[sl]

    # --- 3. per-player infosets, edges and own-reach paths --------------------------------
    players = []
    seq_of_node = []  # per q: (n,) index of q's last edge on the path to each node
    for p in range(n_players):
        acts = actions[p]
        n_inf = len(acts)
        width = max((len(a) for a in acts), default=1)
        act_arr = np.full((n_inf, width), -1, dtype=np.int64)
        for row, legal in enumerate(acts):
            act_arr[row, : len(legal)] = legal
        legal_mask = act_arr >= 0
        nodes = np.flatnonzero(kind_a == p)
        node_inf = infoset_a[nodes]
        edge_child = np.flatnonzero(edge_owner == p)
        n_edges = len(edge_child)
        edge_parent = np.searchsorted(nodes, parent_a[edge_child])
        edge_sa = node_inf[edge_parent] * width + slot_a[edge_child]
        edge_index = np.full(n, -1, dtype=np.int64)
        edge_index[edge_child] = np.arange(n_edges)
        seq = np.full(n, n_edges, dtype=np.int64)  # n_edges: no own edge yet (the root)
        own_depth = np.zeros(n, dtype=np.int64)
        for lv in levels:
            sl = slice(lv.child_start, lv.child_stop)
            mine = edge_owner[sl] == p
            seq[sl] = np.where(mine, edge_index[sl], seq[parent_a[sl]])
            own_depth[sl] = own_depth[parent_a[sl]] + mine
        # own-reach layout: edges sorted by own depth, so each group is a slice
        edge_depth = own_depth[edge_child]
        order = np.argsort(edge_depth, kind="stable")
        position = np.empty(n_edges + 1, dtype=np.int64)
        position[order] = np.arange(n_edges)
        position[n_edges] = n_edges
        reach_prev = position[seq[parent_a[edge_child[order]]]]
        reach_sa = edge_sa[order]
        sorted_depth = edge_depth[order]
        top = int(sorted_depth.max(initial=0))
        cuts = np.searchsorted(sorted_depth, np.arange(1, top + 2))
        reach_groups = tuple((int(cuts[k]), int(cuts[k + 1])) for k in range(top))
        seq_of_node.append(position[seq])
        del edge_index, own_depth, seq
        parent_depth = depth_a[parent_a[edge_child]]
        bounds = np.searchsorted(parent_depth, np.arange(max_depth + 1))
        level_edges = tuple((int(bounds[d]), int(bounds[d + 1])) for d in range(max_depth))
        histories = np.bincount(node_inf, minlength=n_inf)
        players.append(
            PlayerInfosets(
                player=p,
                keys=tuple(sorted(keys[p], key=keys[p].__getitem__)),
                actions=act_arr,
                legal=legal_mask,
                num_actions=legal_mask.sum(axis=1),
                nodes=nodes,
                node_infoset=node_inf,
                edge_child=edge_child,
                edge_parent=edge_parent,
                edge_sa=edge_sa,
                edge_parent_node=parent_a[edge_child],
                reach_sa=reach_sa,
                reach_prev=reach_prev,
                reach_groups=reach_groups,
                level_edges=level_edges,
                histories=histories,
            )
        )

    seq = tuple(
        tuple(seq_of_node[q][players[p].nodes] for q in range(n_players))
        for p in range(n_players)
    )
    aligned = True
    for pl in players:
        dmin = np.full(pl.num_infosets, np.iinfo(np.int64).max)
        dmax = np.full(pl.num_infosets, -1)
        np.minimum.at(dmin, pl.node_infoset, depth_a[pl.nodes])
        np.maximum.at(dmax, pl.node_infoset, depth_a[pl.nodes])
        aligned &= bool(np.array_equal(dmin, dmax))

    tree = GameTree(
        game_string=game_string,
        game=game,
        num_players=n_players,
        kind=kind_a,
        parent=parent_a,
        edge_owner=edge_owner,
        chance_prob=chance_prob,
        chance_reach=chance_reach,
        depth_start=depth_start,
        levels=tuple(levels),
        terminals=terminals,
        utilities=utilities,
        players=tuple(players),
        seq=seq,
        level_aligned=aligned,
        build_seconds=time.perf_counter() - start,
    )
    log.info("built tree %s", tree.summary())
    return tree
