"""An LLM-written program run in the policy sandbox and called with plain data.

Discovery programs (CFR hooks, meta-solvers) are untrusted like policies, so they run only
in ``csro.policies.PolicyWorker`` processes (rlimits, own uid, no network, audit hook); the
caller gets JSON data back, never objects, and checks it before use. A failure of any kind
becomes ``ProgramFailure`` with the sandbox's reason and the useful end of its detail.
"""

from __future__ import annotations

from csro.errors import ProgramFailure
from csro.policies import Call, Forfeit, PolicyWorker, SandboxLimits


class SandboxedProgram:
    """One instance of ``class_name`` from ``source``, living in its own worker process."""

    def __init__(self, source: str, class_name: str, limits: SandboxLimits, seed: int = 0):
        self._worker = PolicyWorker(source, class_name, limits, seed=seed)
        self._call(Call(0, "__init__", []))

    def call(self, method: str, *args):
        """``instance.method(*args)`` in the worker; its plain-data result."""
        return self._call(Call(0, method, list(args)))

    def _call(self, call: Call):
        forfeit = self._worker.start()
        if forfeit is None:
            result = self._worker.call([call])[0]
            if not isinstance(result, Forfeit):
                return result
            forfeit = result
        raise ProgramFailure(forfeit.describe())

    def close(self) -> None:
        self._worker.close()

    def __enter__(self) -> "SandboxedProgram":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

