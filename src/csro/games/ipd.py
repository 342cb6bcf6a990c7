"""The iterated prisoner's dilemma (IPD) as code policies see it, against the axelrod library.

The engine is OpenSpiel's repeated game (``pyspiel.create_repeated_game``, recall 1) over a
prisoner's-dilemma matrix game with the payoffs of Axelrod's tournaments and of the axelrod
library's default ``Game``: R = 3 (both cooperate), S = 0 and T = 5 (sucker / temptation),
P = 1 (both defect). OpenSpiel's own ``matrix_pd`` uses 5/0/10/1, so we build the stage game
with these values rather than rescale. A match is ``turns`` simultaneous rounds (default
200, the axelrod library's default tournament length); a seat's return is the sum of its
stage payoffs, exactly axelrod's ``Match.final_score``. The game is general-sum.

Policy API: ``class Agent`` with ``act(observation) -> 'C' | 'D'``; the observation is the
previous round, ``{'my_action': 'C' | 'D' | None, 'opponent_action': ...}`` (None at the
first round), as in RRPS. The number of turns is in the rules text (axelrod's strategies are
told the match length too, through ``set_match_attributes``).

Evaluation population: the strategies of the axelrod library (Knight et al., "An open
framework for the reproducible study of the iterated prisoner's dilemma", JORS 2016; PyPI
``axelrod``, the ``ipd`` extra) that obey the rules of Axelrod's tournaments and are not
marked long-running — ``axelrod.short_run_time_strategies``, 224 in axelrod 4.14 — named by
class (``builtin:TitForTat``). They are trusted built-ins run in the match runner's
process, driven as ``axelrod.Match`` drives them: a fresh player per match, given the match
attributes (length = turns, this game, no noise), then per round ``strategy(opponent)``
followed by ``update_history`` on both sides. The opponent a strategy sees is an
``axelrod.Player`` that only carries the other seat's history (rule-abiding strategies read
nothing else). Randomness: each instance's generator is seeded from its match seed
(``Player.set_seed(seed mod 2**32)``), so a match is reproducible and independent of the
other matches in the process; the library's own ``Match`` derives player seeds from its
match seed differently, so stochastic strategies agree with it in distribution only.

Metrics: PopReturn is a policy's mean match score against the population; divided by
``turns`` it is axelrod's *normalised score* (mean score per turn over the opponents), the
tournament score by which ``csro.evaluation.tournament`` ranks entrants and population as
axelrod's ``ResultSet.ranked_names`` does. A forfeit scores the forfeiting seat the
minimum, 0, and the other seat 0 too (``forfeit_returns``).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
from typing import Any, Callable, Iterator, Sequence

import pyspiel

from csro.errors import GameError, IllegalAction
from csro.games._base import (
    BuiltinInstance,
    BuiltinPolicy,
    CodeGame,
    Match,
    Request,
    forfeit_returns,
)
from csro.games._common import UniformRandom

ACTIONS: tuple[str, ...] = ("C", "D")
_INDEX = {name: i for i, name in enumerate(ACTIONS)}
# (R, S, T, P): axelrod's default Game and Axelrod's tournaments.
PAYOFFS = {"R": 3.0, "S": 0.0, "T": 5.0, "P": 1.0}
DEFAULT_TURNS = 200


def stage_game() -> pyspiel.MatrixGame:
    """The prisoner's dilemma with payoffs ``PAYOFFS`` (row: seat 0; actions C, D)."""
    r, s, t, p = (PAYOFFS[k] for k in "RSTP")
    return pyspiel.create_matrix_game("ipd_stage", "Prisoner's dilemma (R=3, S=0, T=5, P=1)",
                                      list(ACTIONS), list(ACTIONS), [[r, s], [t, p]], [[r, t], [s, p]])


def _observations(last: tuple[int, int] | None) -> tuple[dict, dict]:
    if last is None:
        return ({"my_action": None, "opponent_action": None},) * 2
    a0, a1 = ACTIONS[last[0]], ACTIONS[last[1]]
    return {"my_action": a0, "opponent_action": a1}, {"my_action": a1, "opponent_action": a0}


class IPDMatch(Match):
    """One match: ``turns`` rounds, each with two ``act`` requests."""

    def __init__(self, game: pyspiel.Game, turns: int, seed: int):
        self.state = game.new_initial_state()
        self.seed = seed
        self.turns = turns
        self.history: list[tuple[int, int]] = []  # joint actions so far (seat 0, seat 1)
        self._forfeit: list[float] | None = None

    def pending(self) -> list[Request]:
        if self.over:
            return []
        obs = _observations(self.history[-1] if self.history else None)
        return [Request(seat, "act", (obs[seat],), ACTIONS) for seat in (0, 1)]

    def answer(self, replies: Sequence[Any]) -> None:
        if self.over:
            raise RuntimeError("answer() on a finished match")
        joint = []
        for seat, reply in enumerate(replies):
            try:
                joint.append(_INDEX[reply])
            except (KeyError, TypeError):
                raise IllegalAction(seat, reply, ACTIONS) from None
        self.state.apply_actions(joint)
        self.history.append((joint[0], joint[1]))

    def returns(self) -> list[float]:
        if self._forfeit is not None:
            return list(self._forfeit)
        return self.state.returns()

    def forfeit(self, seat: int) -> None:
        self._forfeit = forfeit_returns(2, seat, 0.0)

    @property
    def over(self) -> bool:
        return self._forfeit is not None or len(self.history) == self.turns


@contextlib.contextmanager
def each_source_read_once() -> Iterator[Callable[[Any], str]]:
    """``inspect.getsource`` answering each function's source from a cache while the block runs.

    At import, axelrod classifies its strategies by reading the source of their methods
    (``axelrod.makes_use_of``): about 15,000 ``inspect.getsource`` calls on a few dozen
    functions, each tokenizing its file again: 18 of the import's 26 s of CPU here. The
    source of a function is the same text every time it is read (its file does not change
    during an import), so answering repeats from a cache keyed by the function (a bound
    method by the function it binds) leaves every classifier as it was. Yields the cached
    reader.
    """
    original = inspect.getsource
    read = functools.cache(original)
    inspect.getsource = lambda obj: read(getattr(obj, "__func__", obj))
    try:
        yield read
    finally:
        inspect.getsource = original


@functools.cache
def _axelrod():
    try:
        with each_source_read_once():
            import axelrod
    except ImportError as exc:
        raise GameError(f"the ipd game's population is the axelrod library, which failed to import "
                        f"({exc}); pip install 'csro[ipd]'") from None
    return axelrod


class _AxelrodInstance(BuiltinInstance):
    """One axelrod player in one seat, kept in step with the match's history."""

    def __init__(self, player, opponent, seat: int):
        self._player = player
        self._opponent = opponent  # an axelrod.Player carrying only the other seat's history
        self._seat = seat
        self._seen = 0  # rounds of the match already recorded in both histories

    def respond(self, request: Request, match: Match) -> Any:
        history = match.history
        axl = _axelrod()
        while self._seen < len(history):
            mine, theirs = history[self._seen][self._seat], history[self._seen][1 - self._seat]
            own, other = (axl.Action.C, axl.Action.D)[mine], (axl.Action.C, axl.Action.D)[theirs]
            self._player.update_history(own, other)
            self._opponent.update_history(other, own)
            self._seen += 1
        return str(self._player.strategy(self._opponent))


class AxelrodStrategy(BuiltinPolicy):
    """A strategy of the axelrod library (``builtin:<class name>``), trusted."""

    def __init__(self, cls, turns: int):
        self.name = cls.__name__
        self.description = f"axelrod strategy {cls.name!r}"
        self._cls = cls
        self._turns = turns

    def instance(self, seat: int, seed: int) -> BuiltinInstance:
        axl = _axelrod()
        game = axl.Game(r=PAYOFFS["R"], s=PAYOFFS["S"], t=PAYOFFS["T"], p=PAYOFFS["P"])
        player, opponent = self._cls(), axl.Player()
        for p in (player, opponent):
            p.set_match_attributes(length=self._turns, game=game, noise=0)
        player.set_seed(seed % 2**32)
        return _AxelrodInstance(player, opponent, seat)


RULES_TEXT = """\
The iterated prisoner's dilemma (IPD), {n} rounds per match, two players.

Each round both players choose at the same time, without seeing the other's choice,
to cooperate ('C') or defect ('D'). Payoffs per round (yours, the opponent's):
both cooperate 3, 3; both defect 1, 1; you defect while they cooperate 5, 0; you
cooperate while they defect 0, 5. After each round both players see what the other did.
Your match return is the sum of your payoffs over the {n} rounds (0 to {max}). The game
is not zero-sum: mutual cooperation earns both players more than mutual defection, but
in any single round defecting earns more whatever the other does.

Your opponents are the strategies of the axelrod library: over two hundred programs from
the literature and from Axelrod's tournaments (Tit For Tat, Grudger, Pavlov, zero-determinant
extortioners, strategies that probe, forgive, retaliate or detect and exploit patterns).
Some are deterministic, some random; they know the number of rounds. Your score in the
tournament is your mean payoff per round over all of them: maximise your own total, not
the difference to the opponent. The same policy object plays one whole match, so it can
keep any state it likes between rounds.
"""

API_SPEC = '''\
class Agent:
    """An iterated prisoner's dilemma policy. One instance plays one whole match.

    The runner creates the object with no arguments, then calls ``act`` once per round
    ({n} times). Keep whatever state you need on ``self``. Only the Python standard
    library (and numpy, if available) may be imported.
    """

    def __init__(self):
        ...

    def act(self, observation: dict) -> str:
        """Choose this round's action.

        Args:
          observation: the previous round, from your point of view:
            {{'my_action': 'C' | 'D' | None, 'opponent_action': 'C' | 'D' | None}}
            Both values are None at the first round of the match.

        Returns:
          'C' (cooperate) or 'D' (defect), exactly these strings. Anything else, an
          exception, or a timeout forfeits the match.
        """
'''

EXAMPLE_POLICY = '''\
class Agent:
    """Tit for tat: cooperate first, then copy the opponent's previous action."""

    def act(self, observation: dict) -> str:
        return observation["opponent_action"] or "C"
'''


class IPDGame(CodeGame):
    """The iterated prisoner's dilemma with the axelrod strategies as population (``ipd``)."""

    policy_class = "Agent"
    num_players = 2

    def __init__(self, turns: int = DEFAULT_TURNS):
        self.turns = turns
        self.name = "ipd" if turns == DEFAULT_TURNS else f"ipd(turns={turns})"
        self.description = (f"Iterated prisoner's dilemma, {turns} rounds (R=3, S=0, T=5, P=1); "
                            "population: the axelrod library's strategies")
        self.openspiel_game = pyspiel.create_repeated_game(stage_game(), {"num_repetitions": turns, "recall": 1})
        self.return_range = (0.0, PAYOFFS["T"] * turns)
        self.rules_text = RULES_TEXT.format(n=turns, max=int(PAYOFFS["T"] * turns))
        self.api_spec = API_SPEC.format(n=turns)
        self.example_policy = EXAMPLE_POLICY

    def new_match(self, seed: int) -> IPDMatch:
        return IPDMatch(self.openspiel_game, self.turns, seed)

    @functools.cache
    def builtins(self) -> dict[str, BuiltinPolicy]:
        table: dict[str, BuiltinPolicy] = {
            cls.__name__: AxelrodStrategy(cls, self.turns) for cls in _axelrod().short_run_time_strategies
        }
        table["random"] = UniformRandom()
        return table

    def population(self) -> list[str]:
        return [f"builtin:{cls.__name__}" for cls in _axelrod().short_run_time_strategies]
