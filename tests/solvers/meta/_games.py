"""Small games with known equilibria shared by the meta-solver tests."""

import numpy as np

# Rock-paper-scissors: unique equilibrium uniform, value 0.
RPS = np.array([[0.0, -1.0, 1.0], [1.0, 0.0, -1.0], [-1.0, 1.0, 0.0]])

# Matching pennies: unique equilibrium (1/2, 1/2) for both players.
PENNIES = np.array([[1.0, -1.0], [-1.0, 1.0]])

# Weighted RPS A = [[0, -a, b], [a, 0, -c], [-b, c, 0]] with a, b, c = 1, 2, 3. A is
# antisymmetric, so the value is 0 and an interior equilibrium x solves A x = 0:
#   row 1: -a x2 + b x3 = 0, row 2: a x1 - c x3 = 0, row 3: -b x1 + c x2 = 0
#   => x proportional to (c, b, a) = (3, 2, 1), i.e. x = (1/2, 1/3, 1/6) for both players
#   (check row 1: -1/3 + 2/6 = 0; row 2: 1/2 - 3/6 = 0; row 3: -2/2 + 3/3 = 0).
WEIGHTED_RPS = np.array([[0.0, -1.0, 2.0], [1.0, 0.0, -3.0], [-2.0, 3.0, 0.0]])
WEIGHTED_RPS_EQ = np.array([1 / 2, 1 / 3, 1 / 6])

# Zero-sum diagonal game A = diag(1, 2, 3): the row player scores a_i by matching column i.
# Unique equilibrium: both mix x_i proportional to 1/a_i so that a_i x_i is constant:
#   sum 1/a_i = 1 + 1/2 + 1/3 = 11/6  =>  x = y = (6/11, 3/11, 2/11), value 1/(11/6) = 6/11
#   (row i earns a_i y_i = 6/11 for every i; column j concedes a_j x_j = 6/11 for every j).
DIAGONAL = np.diag([1.0, 2.0, 3.0])
DIAGONAL_EQ = np.array([6 / 11, 3 / 11, 2 / 11])
DIAGONAL_VALUE = 6 / 11

# RPS plus a fourth row strictly dominated by Rock (each entry 0.5 lower): the row player's
# equilibrium puts weight 0 on it; the rest stays uniform.
DOMINATED = np.vstack([RPS, RPS[0] - 0.5])


def jordan_game() -> list[np.ndarray]:
    """Jordan's 3-player game: p0 wants to match p1, p1 to match p2, p2 to mismatch p0.

    The unique Nash equilibrium is every player mixing (1/2, 1/2) (no pure profile is
    stable: the best responses go round the cycle).
    """
    t = [np.zeros((2, 2, 2)) for _ in range(3)]
    for a in range(2):
        for b in range(2):
            for c in range(2):
                t[0][a, b, c] = 1.0 if a == b else -1.0
                t[1][a, b, c] = 1.0 if b == c else -1.0
                t[2][a, b, c] = 1.0 if c != a else -1.0
    return t


def dominant_three_player(seed: int = 0) -> list[np.ndarray]:
    """A random 3-player 3x3x3 game in which strategy 2 is strictly dominant for everyone.

    Noise in [0, 0.5) plus a bonus of 1 for playing 2: the unique equilibrium is pure (2, 2, 2).
    """
    rng = np.random.default_rng(seed)
    tensors = []
    for p in range(3):
        t = rng.uniform(0.0, 0.5, size=(3, 3, 3))
        idx = [slice(None)] * 3
        idx[p] = 2
        t[tuple(idx)] += 1.0
        tensors.append(t)
    return tensors
