"""A verl `compute_score` from the course's composite reward (contract: ANCHORS §7; the call and the loading read in
verl's source, v0.7.0 and main of January 2026 (0.8.0.dev): verl/workers/reward_manager/naive.py,
verl/trainer/ppo/reward.py).

verl decodes each response with skip_special_tokens=True and calls

    compute_score(data_source=..., solution_str=..., ground_truth=..., extra_info=...)

expecting a float, or a dict whose "score" is the reward; every key of the dict (score included) is
logged as extra reward information. Point verl at this file:
custom_reward_function.path=<this file> custom_reward_function.name=compute_score
(verl loads the file by its path, so agentrl_ref must be importable in verl's reward workers.)
"""
from __future__ import annotations


from agentrl_ref.composite_reward import CompositeFn, seed_reward_fn



def make_verl_compute_score(reward_fn: CompositeFn | None = None):
    """verl's compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs) -> {"score": total,
    every component} for a composite built with agentrl_ref.make_reward_fn (default: the seed page's).

    data_source and extra_info are accepted and not used; ValueError if solution_str or ground_truth is not a
    str, or if a component is named "score".
    """
    score = reward_fn if reward_fn is not None else seed_reward_fn()

    def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs) -> dict:
        parts = score(solution_str, ground_truth)
        if "score" in parts:
            raise ValueError('a component named "score" would hide the reward in verl\'s log; rename it')
        return {"score": float(parts["total"]), **{k: float(v) for k, v in parts.items() if k != "total"}}

    return compute_score


compute_score = make_verl_compute_score()
