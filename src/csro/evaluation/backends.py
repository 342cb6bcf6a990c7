"""Where the match runner's chunks are played: a local process pool or a Ray cluster.

Hennes et al. (arXiv 2603.10098) evaluate every new policy against the population and the
evaluation bots, which is most of a CSRO run's compute; the paper does not say how it is
distributed. Our interpretation: the unit of distribution is the runner's ``Chunk`` (see
``csro.evaluation.runner``), played by ``play_chunk`` wherever it lands, which starts its
own sandboxed workers for the code policies it needs. A match's seed is derived from the
run seed, the policy names and the match index, so the results do not depend on the
backend, the number of processes or the order in which chunks finish.

* ``LocalBackend``: the runner's fork-started process pool (``run_chunks``), the default.
* ``RayBackend``: one Ray task per chunk, on a local Ray instance started for the purpose
  or on an existing cluster (whose nodes need csro installed: ``pip install 'csro[ray]'``).
  Untrusted code still runs only in ``PolicyWorker`` sandboxes, which the Ray worker
  process starts exactly as a pool process does.
"""

from __future__ import annotations

import abc
import os
import socket
from typing import Sequence

from csro import __version__
from csro.config import ExecutionConfig
from csro.errors import ConfigError, CsroError
from csro.evaluation.payoff_table import MatchResult
from csro.evaluation.runner import Chunk, ProgressFn, run_chunks

CONNECT_TIMEOUT_S = 5.0  # to open a TCP connection to a cluster's address


class Backend(abc.ABC):
    """Plays chunks and returns their match results in chunk order (as ``run_chunks``).

    ``chunk_matches`` is how many matches a runner process should play together at most
    (None: the runner's ``CHUNK_TARGET``, ``ISOLATED_CHUNK_TARGET`` with isolated matches) and
    ``parallelism`` how many chunks it plays at once; callers plan their chunks with both.
    Speed only: results do not depend on them."""

    chunk_matches: int | None = None

    @property
    def parallelism(self) -> int:
        return os.cpu_count() or 1

    @abc.abstractmethod
    def run(self, chunks: Sequence[Chunk], progress: ProgressFn | None = None) -> list[MatchResult]:
        """Play every chunk; ``progress(done_matches, total_matches)`` as chunks complete."""

    def close(self) -> None:
        """Release what the backend holds; idempotent."""

    def __enter__(self) -> Backend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class LocalBackend(Backend):
    """The runner's process pool on this machine; ``processes`` None means the CPU count."""

    def __init__(self, processes: int | None = None, chunk_matches: int | None = None):
        self.processes = processes
        self.chunk_matches = chunk_matches

    @property
    def parallelism(self) -> int:
        return self.processes or os.cpu_count() or 1

    def run(self, chunks: Sequence[Chunk], progress: ProgressFn | None = None) -> list[MatchResult]:
        return run_chunks(chunks, processes=self.processes, progress=progress)


class RayBackend(Backend):
    """One Ray task per chunk.

    ``address`` None starts a private local Ray instance with ``num_cpus`` CPUs (default:
    this machine's CPU count); otherwise it connects to the cluster at ``address`` (e.g.
    ``127.0.0.1:6379`` or ``ray://host:10001``) and ``num_cpus`` must be None. If Ray is
    already initialised in this process, that instance is used as it is. ``close`` shuts
    down or disconnects only what this backend itself started or connected.

    Raises ConfigError when Ray is not installed or the cluster cannot be reached.
    """

    def __init__(self, address: str | None = None, num_cpus: int | None = None, chunk_matches: int | None = None):
        self.chunk_matches = chunk_matches
        if address is not None and num_cpus is not None:
            raise ConfigError("num_cpus is for a local Ray instance; a cluster at an address has its own")
        self._ray = _import_ray()
        self._owned = False
        if not self._ray.is_initialized():
            if address is not None:
                _check_reachable(address)
            kwargs = {"num_cpus": num_cpus or os.cpu_count() or 1} if address is None else {}
            try:
                # "local" starts a new instance even if another one (or RAY_ADDRESS) exists.
                self._ray.init(address=address or "local", ignore_reinit_error=True,
                               include_dashboard=False, log_to_driver=False,
                               configure_logging=False, **kwargs)
            except self._ray.exceptions.AuthenticationError as exc:
                raise ConfigError(_token_refused(address, exc)) from None
            except (ConnectionError, TimeoutError, ValueError, RuntimeError) as exc:
                where = f"the Ray cluster at {address}" if address else "a local Ray instance"
                raise ConfigError(f"cannot start or reach {where}: {_first_line(exc)}") from None
            self._owned = True
        self._play = self._ray.remote(num_cpus=1)(play_on_node)

    @property
    def parallelism(self) -> int:
        """The cluster's CPUs (one chunk a CPU)."""
        return max(1, int(self._ray.cluster_resources().get("CPU", 1)))

    def run(self, chunks: Sequence[Chunk], progress: ProgressFn | None = None) -> list[MatchResult]:
        ray = self._ray
        if not ray.is_initialized():
            raise CsroError("this RayBackend is closed")
        total = sum(len(c.jobs) for c in chunks)
        done = 0
        index = {self._play.remote(chunk, __version__): i for i, chunk in enumerate(chunks)}
        results: list[list[MatchResult]] = [[] for _ in chunks]
        pending = list(index)
        try:
            while pending:
                ready, pending = ray.wait(pending, num_returns=1)
                for ref in ready:
                    i = index[ref]
                    results[i] = ray.get(ref)
                    done += len(chunks[i].jobs)
                    if progress:
                        progress(done, total)
        except ray.exceptions.RayTaskError as exc:
            for ref in pending:
                ray.cancel(ref)  # a KeyboardInterrupt in the task: play_chunk closes its workers
            if isinstance(exc.cause, CsroError):  # e.g. SandboxError: this node cannot sandbox
                raise exc.cause from None
            raise
        except ray.exceptions.RayError as exc:  # the cluster itself: a node or worker died for good
            for ref in pending:
                ray.cancel(ref)
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise CsroError(f"the Ray cluster could not finish a chunk of matches ({type(exc).__name__}: "
                            f"{first}); what was stored before stays, and `csro resume` continues the run") from exc
        return [r for chunk_results in results for r in chunk_results]

    def close(self) -> None:
        if self._owned:
            self._owned = False
            self._ray.shutdown()


def play_on_node(chunk: Chunk, driver_version: str) -> list[MatchResult]:
    """A Ray task's body: play one chunk on whichever node Ray chose.

    Refuses to play when the node's csro is not the driver's (the results would not be the
    run's), naming both versions. The chunk is played through ``run_chunks``, so in a forked
    child of the Ray worker: the worker's own threads draw from the C library's ``random()``,
    which the RoShamBo bots draw from (issue 28: one match in a few hundred changed on a
    two-node cluster before)."""
    if driver_version != __version__:
        raise CsroError(f"csro version mismatch: the driver runs csro {driver_version}, the Ray node "
                        f"{socket.gethostname()} has csro {__version__} ({os.path.dirname(__file__)}); "
                        f"install the same csro on every node")
    return run_chunks([chunk], processes=1)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _token_refused(address: str | None, exc: BaseException) -> str:
    """What a driver without the cluster's token must do (Ray's token authentication, on by
    default since Ray 2.59/2.61; README, "Running on a Ray cluster")."""
    where = f"the Ray cluster at {address}" if address else "a local Ray instance"
    return (f"{where} refused this driver's token ({_first_line(exc)}): set RAY_AUTH_MODE=token and "
            "RAY_AUTH_TOKEN to the cluster's token (`ray get-auth-token` on the head prints it), as on every "
            "node that joins it")


def _import_ray():
    try:
        import ray
    except ImportError:
        raise ConfigError("the ray execution backend needs Ray: pip install 'csro[ray]'") from None
    return ray


def _check_reachable(address: str) -> None:
    """Refuse at once a ``[ray://]host:port`` nobody listens at: Ray itself retries for minutes.

    ``auto`` (find the cluster this machine last started) is left to Ray.
    """
    if address == "auto":
        return
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ConfigError(f"Ray address {address!r} is not host:port, ray://host:port or auto")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as exc:
        raise ConfigError(f"cannot reach the Ray cluster at {address}: {exc.strerror or exc}") from None


def make_backend(execution: ExecutionConfig) -> Backend:
    """The backend an ``execution`` config section asks for."""
    if execution.backend == "ray":
        return RayBackend(address=execution.address, chunk_matches=execution.chunk_matches)
    return LocalBackend(processes=execution.processes, chunk_matches=execution.chunk_matches)
