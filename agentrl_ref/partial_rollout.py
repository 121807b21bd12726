"""Interruptible generation: one trajectory, several policy versions (exercise 10).

In fully asynchronous RL the trainer publishes new weights while a long trajectory is still being generated. If the
rollout worker switches to the new weights mid-trajectory (slime --partial-rollout, AReaL's interruptible generation,
PipelineRL's in-flight weight updates, verl's fully-async partial rollout), the trajectory's tokens come from several
policy versions. Its behaviour log-probs and its staleness are then per token, not per trajectory:

    traj = PartialTrajectory(prompt_ids)
    traj.extend(ids, logps, version)        # a segment: the ids sampled by `version`, each with its log-prob
    traj.token_versions                     # LongTensor: the version that sampled each generated token
    traj.behaviour_logp                     # FloatTensor: each generated token's log-prob under that version
    token_staleness(traj, current_version)  # per token: current_version - version (ValueError: from the future)
    oldest_staleness(traj, v), newest_staleness(traj, v)   # the trajectory's oldest / newest token's staleness
    admit(traj, current_version, max_staleness)            # exercise 4's rule applied to the OLDEST token

The admission rule bounds the oldest token: a trajectory is admitted iff current_version - min(versions) <=
max_staleness. Admitting by the newest token would let a trajectory that started long ago through as soon as its
last few tokens are fresh, while most of its tokens are as old as ever.

Versions are ints >= 0 and never go backwards within a trajectory (a worker only ever loads newer weights). The
functions take a PartialTrajectory or the versions themselves (a list, a tuple or a 1-D tensor). Standard library
and torch only.
"""
from __future__ import annotations

import math
from typing import Iterable, Sequence

import torch

PROMPT_VERSION = -1  # the version of positions no policy sampled (prompt, tool results), as AReaL writes them


def _version(value, what: str = "version") -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{what} must be an int >= 0, got {value!r}")
    return value


class PartialTrajectory:
    """A prompt and the tokens generated after it, segment by segment: every generated id with the behaviour log-prob
    it was sampled with and the policy version that sampled it (three lists of one length)."""

    def __init__(self, prompt_ids: Iterable[int] = ()):
        self.prompt_ids: list[int] = [int(i) for i in prompt_ids]
        self.ids: list[int] = []
        self.logps: list[float] = []
        self.versions: list[int] = []

    def __len__(self) -> int:
        return len(self.ids)

    def __repr__(self) -> str:
        return f"PartialTrajectory(prompt={len(self.prompt_ids)}, generated={len(self.ids)}, segments={self.segments})"

    def extend(self, ids: Sequence[int], logps: Sequence[float], version: int) -> "PartialTrajectory":
        """Append a segment: `ids` sampled by policy `version`, logps[i] = log pi_version(ids[i] | everything before).
        ValueError (and nothing appended) when the lengths differ, a log-prob is not a finite number <= 0, or the
        version is not an int >= 0 or is older than the trajectory's last token's."""
        version = _version(version)
        ids, logps = [int(i) for i in ids], [float(x) for x in logps]
        if len(ids) != len(logps):
            raise ValueError(f"{len(ids)} ids but {len(logps)} log-probs: every sampled id needs its log-prob")
        bad = [x for x in logps if not (math.isfinite(x) and x <= 0.0)]
        if bad:
            raise ValueError(f"a log-prob must be a finite number <= 0, got {bad[0]!r}")
        if self.versions and version < self.versions[-1]:
            raise ValueError(f"version {version} is older than the trajectory's last token's ({self.versions[-1]}): "
                             "a worker never goes back to older weights")
        self.ids += ids
        self.logps += logps
        self.versions += [version] * len(ids)
        return self

    @property
    def token_versions(self) -> torch.Tensor:
        """The version that sampled each generated token, int64, shape [len(self)]."""
        return torch.tensor(self.versions, dtype=torch.long)

    @property
    def behaviour_logp(self) -> torch.Tensor:
        """Each generated token's log-prob under the version that sampled it, float32, shape [len(self)]."""
        return torch.tensor(self.logps, dtype=torch.float32)

    @property
    def segments(self) -> list[tuple[int, int]]:
        """(version, number of tokens) of each run of tokens sampled by one version, in order."""
        out: list[tuple[int, int]] = []
        for v in self.versions:
            if out and out[-1][0] == v:
                out[-1] = (v, out[-1][1] + 1)
            else:
                out.append((v, 1))
        return out

    def full_versions(self) -> torch.Tensor:
        """Versions over prompt + generated tokens, PROMPT_VERSION on the prompt (AReaL's "versions" tensor)."""
        return torch.tensor([PROMPT_VERSION] * len(self.prompt_ids) + self.versions, dtype=torch.long)

    def staleness(self, current_version: int) -> torch.Tensor:
        return token_staleness(self, current_version)

    def admitted(self, current_version: int, max_staleness: int) -> bool:
        return admit(self, current_version, max_staleness)


def _versions(trajectory_or_versions) -> torch.Tensor:
    """The generated tokens' versions as a 1-D int64 tensor; ValueError for anything else."""
    if isinstance(trajectory_or_versions, PartialTrajectory):
        return trajectory_or_versions.token_versions
    versions = torch.as_tensor(trajectory_or_versions)
    if versions.dim() != 1:
        raise ValueError(f"versions must be one-dimensional, got shape {tuple(versions.shape)}")
    if versions.numel() and (versions.is_floating_point() or versions.is_complex() or versions.dtype == torch.bool):
        raise ValueError(f"versions must be ints, got {versions.dtype}")
    versions = versions.to(torch.long)
    if versions.numel() and int(versions.min()) < 0:
        raise ValueError("a generated token's version must be >= 0")
    return versions


def token_staleness(trajectory_or_versions, current_version: int) -> torch.Tensor:
    """Per generated token: how many versions it lags the trainer's current one, current_version - version (int64).
    ValueError if a token carries a version the trainer has not published yet."""
    current_version = _version(current_version, "current_version")
    staleness = current_version - _versions(trajectory_or_versions)
    if staleness.numel() and int(staleness.min()) < 0:
        raise ValueError(f"a token of version {current_version - int(staleness.min())} is newer than the trainer's "
                         f"current version {current_version}")
    return staleness


def oldest_staleness(trajectory_or_versions, current_version: int) -> int:
    """The staleness of the trajectory's oldest token (the largest); 0 when nothing is generated yet."""
    staleness = token_staleness(trajectory_or_versions, current_version)
    return int(staleness.max()) if staleness.numel() else 0


def newest_staleness(trajectory_or_versions, current_version: int) -> int:
    """The staleness of the trajectory's newest token (the smallest); 0 when nothing is generated yet."""
    staleness = token_staleness(trajectory_or_versions, current_version)
    return int(staleness.min()) if staleness.numel() else 0


def admit(trajectory_or_versions, current_version: int, max_staleness: int) -> bool:
    """Exercise 4's max_staleness applied to the oldest token: current_version - min(versions) <= max_staleness."""
    max_staleness = _version(max_staleness, "max_staleness")
    return oldest_staleness(trajectory_or_versions, current_version) <= max_staleness


def staleness_histogram(pairs: Iterable[tuple[object, int]]) -> dict[int, int]:
    """{staleness: number of tokens} over (trajectory or versions, the trainer's version when it trained on it)."""
    counts: dict[int, int] = {}
    for trajectory_or_versions, current_version in pairs:
        for s in token_staleness(trajectory_or_versions, current_version).tolist():
            counts[s] = counts.get(s, 0) + 1
    return dict(sorted(counts.items()))
