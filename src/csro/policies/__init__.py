"""Code policies and their sandbox.

``PolicyWorker`` runs one LLM-written policy class in its own sandboxed process and calls its
methods in batches; every failure of the policy comes back as a ``Forfeit`` with a ``Reason``.
See ``csro.policies._sandbox`` for what is guaranteed and ``isolation_mode()`` for how
strongly this machine can isolate workers.
"""

from csro.policies._sandbox import PolicyWorker, isolation_mode
from csro.policies._types import Call, Forfeit, Reason, Result, SandboxLimits, describe_failure

__all__ = ["PolicyWorker", "SandboxLimits", "Forfeit", "Reason", "Call", "Result",
           "describe_failure", "isolation_mode"]
