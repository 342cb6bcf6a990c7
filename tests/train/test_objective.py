"""The SRPO objective and its baselines against hand-computed examples."""

import math

import pytest

torch = pytest.importorskip("torch")

from csro.train.objective import grpo_objective, group_advantages, member_log_ratios, srpo_objective  # noqa: E402


def _rows(ratios, width=3):
    """new/old log-probs whose masked per-row sums are ``ratios`` (split over the first tokens)."""
    new = torch.zeros(len(ratios), width)
    old = torch.full((len(ratios), width), -2.0)
    mask = torch.zeros(len(ratios), width)
    for r, (l1, l2) in enumerate(ratios):
        new[r, 0], new[r, 1] = -2.0 + l1, -2.0 + l2
        mask[r, :2] = 1.0
        new[r, 2] = 5.0  # a padding / prompt position: must not count
    return new, old, mask


def test_group_advantage_by_hand():
    # group a: rewards 1, 0, 0, 1 -> mean 0.5, population sd 0.5 -> +-1; group b: a single reward -> 0
    adv = group_advantages([1, 0, 0, 1, 7], ["a", "a", "a", "a", "b"])
    assert adv[:4] == pytest.approx([1, -1, -1, 1], abs=1e-5)
    assert adv[4] == 0.0


def test_member_log_ratio_sums_generated_tokens_only():
    new, old, mask = _rows([(0.1, 0.2), (0.3, -0.4)])
    assert member_log_ratios(new, old, mask).tolist() == pytest.approx([0.3, -0.1], abs=1e-6)


@pytest.mark.parametrize("norm, advantage, expected", [
    # one event of K = 2 with l_1 = 0.1 + 0.0, l_2 = 0.3 + 0.0: sum 0.4
    ("sqrt", 1.0, 1.2),                  # rho = exp(0.4 / sqrt 2) = 1.3269 > 1.2: clipped
    ("sqrt", -1.0, -1.326896),           # A < 0: min(-1.3269, -1.2) keeps the unclipped term
    ("sum", -1.0, -1.491825),            # rho = exp(0.4)
    ("mean", 1.0, 1.2),                  # rho = exp(0.2) = 1.2214: clipped
    ("mean", -1.0, -1.221403),
    ("singleton", 1.0, 1.152585),        # (min(exp .1, 1.2) + min(exp .3, 1.2)) / 2 = (1.10517 + 1.2) / 2
    ("singleton", -1.0, -1.227515),      # (-1.10517 - 1.34986) / 2
])
def test_srpo_one_event_by_hand(norm, advantage, expected):
    new, old, mask = _rows([(0.1, 0.0), (0.3, 0.0)])
    j, _ = srpo_objective(new, old, mask, torch.tensor([0, 0]), torch.tensor([2.0]), torch.tensor([advantage]),
                          norm=norm, clip_eps=0.2)
    assert float(j) == pytest.approx(expected, abs=1e-5)


def test_srpo_is_the_mean_over_events_not_rows_or_tokens():
    # event 0: K = 1, l = 0.05 -> rho 1.05127, A = 2 -> 2.10254; event 1: K = 3, l = (0, 0, 0.3) -> rho exp(0.3/sqrt3)
    # = exp(0.173205) = 1.189110, A = -0.5 -> -0.594555. J = (2.10254 - 0.594555) / 2 = 0.753993
    new, old, mask = _rows([(0.05, 0.0), (0.0, 0.0), (0.0, 0.0), (0.1, 0.2)])
    j, _ = srpo_objective(new, old, mask, torch.tensor([0, 1, 1, 1]), torch.tensor([1.0, 3.0]),
                          torch.tensor([2.0, -0.5]), norm="sqrt", clip_eps=0.2)
    assert float(j) == pytest.approx(0.753993, abs=1e-5)


def test_k1_is_token_summed_ppo_clip_with_grpo_advantage():
    # Three K = 1 events of one group, rewards 1, 0, 0: mean 1/3, sd sqrt(2)/3 = 0.471405
    # -> A = (0.666667 / 0.471405, -0.333333 / 0.471405, same) = (1.414214, -0.707107, -0.707107).
    rewards = [1.0, 0.0, 0.0]
    adv = group_advantages(rewards, ["g"] * 3)
    assert adv == pytest.approx([1.414214, -0.707107, -0.707107], abs=1e-5)
    # sequence log-ratios 0.1, -0.3, 0.05 -> rho = 1.105171, 0.740818, 1.051271
    # PPO-clip per sequence: min(1.105171*1.414214, 1.105171*1.414214) = 1.562955 (inside the clip)
    #                        min(0.740818*-0.707107, 0.8*-0.707107) = -0.565685 (clip binds: -0.8*0.707107)
    #                        min(1.051271*-0.707107, 1.051271*-0.707107) = -0.743361
    # mean = (1.562955 - 0.565685 - 0.743361) / 3 = 0.084636
    new, old, mask = _rows([(0.04, 0.06), (-0.1, -0.2), (0.05, 0.0)])
    j, _ = srpo_objective(new, old, mask, torch.tensor([0, 1, 2]), torch.ones(3), torch.tensor(adv),
                          norm="sqrt", clip_eps=0.2)
    assert float(j) == pytest.approx(0.084636, abs=1e-5)
    # and every normalisation agrees at K = 1
    for norm in ("sum", "mean", "singleton"):
        jn, _ = srpo_objective(new, old, mask, torch.tensor([0, 1, 2]), torch.ones(3), torch.tensor(adv), norm=norm)
        assert float(jn) == pytest.approx(float(j), abs=1e-6)


def test_grpo_by_hand_is_token_clipped_and_length_averaged():
    # row 0: token log-ratios 0.1, 0.5 -> ratios 1.105171, 1.648721 -> A = 1: (1.105171 + 1.2) / 2 = 1.152585
    # row 1: one token, log-ratio -0.1 -> 0.904837, A = -2: min(-1.809675, -1.809675) = -1.809675
    new, old, mask = _rows([(0.1, 0.5), (-0.1, 0.0)])
    mask[1, 1] = 0.0
    j, _ = grpo_objective(new, old, mask, torch.tensor([1.0, -2.0]), clip_eps=0.2)
    assert float(j) == pytest.approx((1.152585 - 1.809675) / 2, abs=1e-5)


@pytest.mark.parametrize("algo", ["srpo", "grpo"])
def test_gradients_flow_only_through_generated_tokens(algo):
    new, old, mask = _rows([(0.01, 0.02), (0.03, -0.01)])
    new.requires_grad_(True)
    if algo == "srpo":
        j, _ = srpo_objective(new, old, mask, torch.tensor([0, 0]), torch.tensor([2.0]), torch.tensor([1.0]))
    else:
        j, _ = grpo_objective(new, old, mask, torch.tensor([1.0, -1.0]))
    j.backward()
    assert torch.all(new.grad[mask == 0] == 0)
    assert torch.all(new.grad[mask == 1] != 0)


def test_srpo_gradient_at_ratio_one_is_advantage_over_sqrt_k():
    # d rho / d l_j at rho = 1 is 1/sqrt(K): with K = 4, A = 1, one event -> each token's grad is 0.5
    new, old, mask = _rows([(0.0, 0.0)] * 4)
    new.requires_grad_(True)
    j, _ = srpo_objective(new, old, mask, torch.zeros(4, dtype=torch.long), torch.tensor([4.0]), torch.tensor([1.0]))
    j.backward()
    assert new.grad[mask == 1].tolist() == pytest.approx([0.5] * 8)
    assert math.isclose(float(j), 1.0)
