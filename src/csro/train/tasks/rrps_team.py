"""``rrps-team``: K proposers write RRPS policies in parallel, a selector picks one.

The oracle's team as an SRPO workflow (arXiv 2609.08452 applied to CSRO, our
interpretation): the proposers' programs are one active set (K_e = k) and the selector's
choice is a second event (K_e = 1). The team reward is the selected program's mean return
per throw against a fixed opponent mixture (uniform over ``opponents``), in [-1, 1],
measured by csro's match runner with the program in a sandboxed worker
(``csro.evaluation.evaluate``); it is never executed in this process. A reply with no
``Agent`` class, or one that forfeits, scores the game's minimum like any forfeit.

Proposers reply in the oracle's ``prefill`` style (``csro.oracles._context.prefill``): the
class header is given by the environment and is masked out of the update.
"""

from __future__ import annotations

from typing import Sequence

from csro.config import OracleConfig
from csro.evaluation import code_policy, evaluate, resolve
from csro.games import load_game
from csro.extract import extract_code
from csro.oracles import prefill
from csro.train.replies import first_int
from csro.train.events import Stage, Workflow
from csro.train.rollout import Episode

WORKFLOW = Workflow("proposers-selector", (Stage("proposer", None), Stage("selector")))
DEFAULT_OPPONENTS = ("builtin:rotatebot", "builtin:copybot", "builtin:freqbot2")


class RRPSTeamTask:
    """The ``rrps-team`` task: see the module docstring."""

    name = "rrps-team"
    workflow = WORKFLOW

    def __init__(self, k: int = 3, seed: int = 0, num_throws: int = 100,
                 opponents: Sequence[str] = DEFAULT_OPPONENTS, tokens: dict[str, int] | None = None):
        self.k, self.seed = k, seed
        self.game = load_game(f"rrps(num_throws={num_throws})")
        self.opponents = [resolve(o, self.game) for o in opponents]
        self.prefill = prefill(self.game, OracleConfig())
        self.tokens = {"proposer": 160, "selector": 4, **(tokens or {})}

    def problem(self, step: int, index: int) -> str:
        names = ", ".join(o.name.removeprefix("builtin:") for o in self.opponents)
        return f"the opponents are the RoShamBo bots {names}, in equal shares"

    def width(self, stage: Stage, episode: Episode) -> int:
        return self.k if stage.width is None else stage.width

    def max_new_tokens(self, role: str) -> int:
        return self.tokens[role]

    def prompt(self, stage: Stage, member: int, episode: Episode) -> tuple[list[tuple[str, str]], str]:
        g = self.game
        if stage.role == "proposer":
            return [("system", "You write Python game-playing policies."),
                    ("user", f"{g.rules_text}\n{g.api_spec}\nIn this match {episode.problem}. "
                             f"Write a class {g.policy_class} that beats them, in one ```python block.")], self.prefill
        listing = "\n\n".join(f"Program {i + 1}:\n{src[:600]}" for i, src in enumerate(episode.outputs["proposer"]))
        return [("system", "You pick the strongest game-playing program."),
                ("user", f"{g.rules_text}\nIn this match {episode.problem}.\n{listing}\n"
                         f"Which program (1 to {len(episode.outputs['proposer'])}) wins most? Reply with one digit.")], ""

    def selected(self, episode: Episode) -> str:
        """The reply the selector picked (its first digit; the first program when out of range)."""
        replies = episode.outputs["proposer"]
        choice = first_int(episode.outputs["selector"][0])
        return replies[choice - 1] if choice is not None and 1 <= choice <= len(replies) else replies[0]

    def rewards(self, episodes: Sequence[Episode], seed: int) -> list[float]:
        low = self.game.return_range[0] / self.game.num_throws
        specs = {}
        for ep in episodes:
            source = extract_code(self.selected(ep), self.game.policy_class).source
            if source is not None:
                specs[ep.index] = code_policy(f"episode-{ep.index}", source, self.game)
        scores = {}
        if specs:
            result = evaluate(self.game, list(specs.values()), self.opponents, matches=1, seed=seed, processes=1)
            scores = {i: s.pop_return / self.game.num_throws for i, s in zip(specs, result.scores)}
        return [scores.get(ep.index, low) for ep in episodes]
