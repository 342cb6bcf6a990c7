"""Code policies and their sandbox.

``PolicyWorker`` runs one LLM-written policy class in its own sandboxed process and calls its
methods in batches; every failure of the policy comes back as a ``Forfeit`` with a ``Reason``.
See ``csro.policies._sandbox`` for what is guaranteed, ``csro.policies._layers`` for the
kernel layers under every worker, and ``check_layers()`` for what this machine gives.
"""

from csro.policies._layers import describe as describe_layers
from csro.policies._layers import explain as explain_layers
from csro.policies._sandbox import PolicyWorker, check_layers
from csro.policies._types import Call, Forfeit, Reason, Result, SandboxLimits, describe_failure

__all__ = ["PolicyWorker", "SandboxLimits", "Forfeit", "Reason", "Call", "Result",
           "describe_failure", "check_layers", "describe_layers", "explain_layers"]
