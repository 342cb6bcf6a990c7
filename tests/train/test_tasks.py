"""The tasks: arith's generated problems and rrps-team's sandboxed reward."""

import pytest

from csro.train.rollout import Episode
from csro.train.tasks.arith import ArithTask, make_problem


def test_arith_problems_are_seeded_with_exact_answers():
    assert make_problem(3) == make_problem(3)
    problems = [make_problem(s) for s in range(200)]
    assert len({p.text for p in problems}) > 100
    for p in problems:
        nums = [int(w) for w in p.text.replace("?", "").split() if w.isdigit()]
        a, b = nums
        assert p.answer in (a + b, a - b, a * b) and p.answer >= 0


def test_arith_router_sets_k_and_reward_is_exact():
    task = ArithTask(k=3)
    solver = task.workflow.stages[1]
    ep = Episode(make_problem(1), 0, {"router": [" 2 solvers"]})
    assert task.width(solver, ep) == 2
    ep.outputs["router"] = ["nine"]
    assert task.width(solver, ep) == 3  # unparseable: k
    ep.outputs["router"] = ["7"]
    assert task.width(solver, ep) == 3  # out of range: k
    right = Episode(make_problem(1), 0, {"aggregator": [f"The answer is {make_problem(1).answer}."]})
    other = Episode(make_problem(1), 1, {"aggregator": [f"{make_problem(1).answer + 1}"]})
    none = Episode(make_problem(1), 2, {"aggregator": ["no idea"]})
    assert task.rewards([right, other, none], seed=0) == [1.0, 0.1, 0.0]


@pytest.mark.integration
def test_rrps_team_reward_plays_the_selected_program_in_the_sandbox():
    from csro.train.tasks.rrps_team import RRPSTeamTask

    task = RRPSTeamTask(k=2, num_throws=50)
    rock = "```python\nclass Agent:\n    def act(self, observation):\n        return 'ROCK'\n```"
    good = "```python\n" + task.game.example_policy + "\n```"
    episodes = [Episode(task.problem(0, 0), 0, {"proposer": ["no code here", good], "selector": ["2"]}),
                Episode(task.problem(0, 0), 1, {"proposer": ["no code here", good], "selector": ["1"]}),
                Episode(task.problem(0, 0), 2, {"proposer": [rock, good], "selector": ["1"]})]
    rewards = task.rewards(episodes, seed=0)
    assert rewards[1] == -1.0  # selected the reply without code: the game's minimum
    assert -1.0 < rewards[0] <= 1.0 and -1.0 <= rewards[2] <= 1.0
    assert rewards[0] != rewards[2]  # two different programs, really played
