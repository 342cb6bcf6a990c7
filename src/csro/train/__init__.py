"""SRPO training of the oracle's LLM team (Yang et al., arXiv 2609.08452).

Modules: ``events`` (workflows and decision events as data), ``objective`` (SRPO with its
normalisations, GRPO, Dr. MAS), ``batching`` (event-atomic mini-batches), ``model``
(torch/transformers policy, LoRA), ``rollout`` (running a workflow), ``tasks`` (``arith``,
``rrps-team``), ``trainer``, ``store`` (the run's tables and checkpoints), ``ablation``.
torch and transformers are imported only by the modules that need them (``pip install
'csro[train]'``).
"""
