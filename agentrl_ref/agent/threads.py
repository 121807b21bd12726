"""A fixed torch thread count for the duration of a run (determinism and speed on a small CPU)."""
from __future__ import annotations

from contextlib import contextmanager

import torch

TORCH_THREADS = 1  # the tensors are tiny: one thread is the fastest and the same on every machine


@contextmanager
def torch_threads(n: int = TORCH_THREADS):
    """torch.set_num_threads(n) inside the block, the previous count restored after it."""
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)
