"""Execution backends: the local pool and a real local Ray instance give the same matches."""

import socket

import pytest

from csro.config import ExecutionConfig
from csro.errors import ConfigError, CsroError
from csro.evaluation import evaluate, resolve
from csro.evaluation.backends import LocalBackend, RayBackend, make_backend
from csro.evaluation.policy_ref import code_policy
from csro.games import load_game
from csro.policies import SandboxLimits

FAST = SandboxLimits(call_seconds=5.0, match_seconds=30.0)

CYCLE = """
class Agent:
    def __init__(self):
        self.moves = ['ROCK', 'PAPER', 'SCISSORS']
        self.t = 0
    def act(self, observation):
        self.t += 1
        return self.moves[self.t % 3]
"""

CRASHES = """
class Agent:
    def act(self, observation):
        raise RuntimeError('boom')
"""


@pytest.fixture(scope="module")
def rrps():
    return load_game("rrps")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_make_backend_local_by_default():
    backend = make_backend(ExecutionConfig())
    assert isinstance(backend, LocalBackend) and backend.processes is None
    assert make_backend(ExecutionConfig(processes=1)).processes == 1


def test_unreachable_ray_cluster_is_refused_at_once():
    with pytest.raises(ConfigError, match="cannot reach the Ray cluster at 127.0.0.1"):
        RayBackend(address=f"127.0.0.1:{_free_port()}")


def test_malformed_ray_address_is_refused():
    with pytest.raises(ConfigError, match="is not host:port"):
        RayBackend(address="no-port-here")


def test_processes_and_backend_together_are_refused(rrps):
    random = resolve("builtin:random", rrps)
    with pytest.raises(ConfigError, match="give processes to the backend"):
        evaluate(rrps, [random], [random], matches=1, processes=1, backend=LocalBackend(1))


@pytest.mark.slow
def test_real_local_ray_gives_the_local_payoff_table(rrps):
    policies = [code_policy("cycle", CYCLE, rrps), code_policy("crashes", CRASHES, rrps)]
    opponents = [resolve(f"builtin:{n}", rrps) for n in ("rotatebot", "randbot", "greenberg")]
    local = evaluate(rrps, policies, opponents, matches=3, seed=5, limits=FAST, backend=LocalBackend(2))
    seen = []
    with RayBackend(num_cpus=2) as ray_backend:
        remote = evaluate(rrps, policies, opponents, matches=3, seed=5, limits=FAST, backend=ray_backend,
                          progress=lambda done, total: seen.append((done, total)))
    key = lambda r: (r.policies, r.seed)  # noqa: E731
    assert sorted(map(key, local.results)) == sorted(map(key, remote.results))
    assert {key(r): (r.returns, r.forfeit and r.forfeit[:2]) for r in local.results} == \
        {key(r): (r.returns, r.forfeit and r.forfeit[:2]) for r in remote.results}
    assert [s.to_dict() for s in local.scores] == [s.to_dict() for s in remote.scores]
    assert seen and seen[-1] == (18, 18)
    assert any(r.forfeit and r.forfeit[1] == "exception" for r in remote.results)


@pytest.mark.slow
def test_a_ray_worker_that_dies_stops_the_evaluation_with_an_error_naming_it(rrps):
    pair = [(resolve("builtin:rockbot", rrps), resolve("builtin:randbot", rrps))]
    from csro.evaluation.runner import plan_chunks

    chunks = plan_chunks(rrps.name, 2, pair, 2, 0, FAST)

    def _die(chunk, version):  # nested: Ray ships it by value
        import os
        os._exit(1)  # the Ray worker process dies, as it does with its node

    with RayBackend(num_cpus=1) as ray_backend:
        ray_backend._play = ray_backend._ray.remote(num_cpus=1, max_retries=0)(_die)
        with pytest.raises(CsroError, match=r"the Ray cluster could not finish a chunk of matches "
                                            r"\(\w+Error: .*`csro resume` continues the run"):
            ray_backend.run(chunks)
