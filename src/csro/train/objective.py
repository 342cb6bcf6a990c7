"""The SRPO objective and its baselines, on per-token log-prob tensors.

SRPO (Yang et al., arXiv 2609.08452), for decision event ``e`` with active set ``S_e``:

1. member log-ratio ``l_ej = sum_u m_u (log q_cur(a_u|o_u) - log q_old(a_u|o_u))`` over the
   member's generated tokens only (``m_u`` masks prompt, padding and environment tokens;
   summed, not length-normalised);
2. set ratio ``rho_e = exp(c(K_e) * sum_j l_ej)`` with ``c = 1/sqrt(K)`` (``sqrt``, the
   paper's choice), ``1`` (``sum``), ``1/K`` (``mean``); ``singleton`` splits every active
   set into ``K`` one-member events that share the set's advantage (the ablation's "K = 1");
3. one advantage per event ``A_e = (R_e - mu_g) / (sigma_g + eps)`` over the comparable
   events ``g`` (``group_advantages``), shared by every member;
4. ``J = 1/|B| sum_e min(rho_e A_e, clip(rho_e, 1-eps, 1+eps) A_e)``, the mean over complete
   events, not tokens; no KL term. The loss is ``-J``.

Baselines behind the same interface:
- ``grpo`` (Shao et al., arXiv 2402.03300): every response is its own unit, token-level
  ratios clipped per token, averaged over the response's generated tokens, then over
  responses; the advantage is the response's event advantage.
- ``drmas`` (Dr. MAS): GRPO's per-response loss with the advantage normalised per agent,
  i.e. over the responses of one role within a group (``group_advantages`` keyed by
  ``(group, role)``). Our interpretation from the SRPO paper's description; with one team
  reward per episode it differs from GRPO in which rewards each role is normalised against.

``sigma`` is the population standard deviation of the group; ``eps = 1e-6``. A numerical
guard of ours: the exponent of every ratio is clamped to ``[-20, 20]`` (far outside any
clip range, so only a diverged update is affected; it keeps ``exp`` finite).
"""

from __future__ import annotations

import math
from typing import Hashable, Sequence

import torch

NORMS = ("sqrt", "sum", "mean", "singleton")
ALGOS = ("srpo", "grpo", "drmas")
ADV_EPS = 1e-6
MAX_LOG_RATIO = 20.0


def group_advantages(rewards: Sequence[float], groups: Sequence[Hashable], eps: float = ADV_EPS) -> list[float]:
    """``(R - mean_g) / (std_g + eps)`` for every reward, with the mean and std of its group."""
    members: dict[Hashable, list[float]] = {}
    for r, g in zip(rewards, groups):
        members.setdefault(g, []).append(float(r))
    stats = {}
    for g, rs in members.items():
        mu = sum(rs) / len(rs)
        stats[g] = (mu, math.sqrt(sum((r - mu) ** 2 for r in rs) / len(rs)))
    return [(float(r) - stats[g][0]) / (stats[g][1] + eps) for r, g in zip(rewards, groups)]


def member_log_ratios(new_logprobs: torch.Tensor, old_logprobs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``l_j = sum_u m_u (new - old)`` per row; ``[rows, tokens] -> [rows]``."""
    return ((new_logprobs - old_logprobs) * mask).sum(dim=-1)


def _norm_scale(norm: str, k: torch.Tensor) -> torch.Tensor:
    if norm == "sqrt":
        return 1.0 / torch.sqrt(k)
    if norm == "sum":
        return torch.ones_like(k)
    if norm == "mean":
        return 1.0 / k
    raise ValueError(f"unknown norm {norm!r}; known: {', '.join(NORMS)}")


def _clipped(ratio: torch.Tensor, advantage: torch.Tensor, clip_eps: float) -> torch.Tensor:
    return torch.minimum(ratio * advantage, torch.clamp(ratio, 1.0 - clip_eps, 1.0 + clip_eps) * advantage)


def srpo_objective(new_logprobs: torch.Tensor, old_logprobs: torch.Tensor, mask: torch.Tensor,
                   event_index: torch.Tensor, event_k: torch.Tensor, event_advantage: torch.Tensor,
                   norm: str = "sqrt", clip_eps: float = 0.2) -> tuple[torch.Tensor, dict]:
    """``J`` (to maximise) and diagnostics for one mini-batch of complete events.

    Args:
      new_logprobs, old_logprobs, mask: ``[rows, tokens]``; ``mask`` is 1 on generated tokens.
      event_index: ``[rows]`` long, the event (0..E-1) of each row.
      event_k: ``[E]`` the expected cardinality ``K_e`` (the batcher guarantees every event
        has all ``K_e`` rows).
      event_advantage: ``[E]`` the shared advantage ``A_e``.
    """
    ell = member_log_ratios(new_logprobs, old_logprobs, mask)
    if norm == "singleton":
        ratio = torch.exp(ell.clamp(-MAX_LOG_RATIO, MAX_LOG_RATIO))
        per_unit = _clipped(ratio, event_advantage[event_index], clip_eps)
    else:
        set_sum = torch.zeros(event_k.shape[0], dtype=ell.dtype, device=ell.device).index_add(0, event_index, ell)
        exponent = _norm_scale(norm, event_k.to(ell.dtype)) * set_sum
        ratio = torch.exp(exponent.clamp(-MAX_LOG_RATIO, MAX_LOG_RATIO))
        per_unit = _clipped(ratio, event_advantage, clip_eps)
    clipped = (ratio - 1.0).abs() > clip_eps
    return per_unit.mean(), {"ratio_mean": float(ratio.detach().mean()),
                             "clip_frac": float(clipped.float().mean())}


def grpo_objective(new_logprobs: torch.Tensor, old_logprobs: torch.Tensor, mask: torch.Tensor,
                   row_advantage: torch.Tensor, clip_eps: float = 0.2) -> tuple[torch.Tensor, dict]:
    """GRPO's per-response objective: token-clipped, mean over each response's tokens, then rows."""
    ratio = torch.exp((new_logprobs - old_logprobs).clamp(-MAX_LOG_RATIO, MAX_LOG_RATIO))
    per_token = _clipped(ratio, row_advantage[:, None], clip_eps) * mask
    per_row = per_token.sum(dim=-1) / mask.sum(dim=-1).clamp(min=1.0)
    clipped = ((ratio - 1.0).abs() > clip_eps).float() * mask
    return per_row.mean(), {"ratio_mean": float((ratio.detach() * mask).sum() / mask.sum().clamp(min=1.0)),
                            "clip_frac": float(clipped.sum() / mask.sum().clamp(min=1.0))}
