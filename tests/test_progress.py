"""The live line of a long notebook cell (agentrl_ref/teaching/shared/progress.py): while it runs it says how long
the rest takes at the measured speed, and the line the page keeps is the final one."""
from __future__ import annotations

from agentrl_ref.teaching.shared import progress
from agentrl_ref.teaching.shared.progress import LiveLine


def test_the_live_line_says_how_long_the_rest_takes_at_the_measured_speed(monkeypatch):
    clock = [100.0]
    monkeypatch.setattr(progress.time, "perf_counter", lambda: clock[0])
    line = LiveLine("SFT", every=0)
    line(0, 40)
    assert line.text == "SFT：0/40（0 s）"                      # nothing measured yet: no guess
    clock[0] = 110.0
    line(10, 40, "loss 0.5")                                  # 10 steps in 10 s: 30 left, 30 s
    assert line.text == "SFT：10/40，loss 0.5（10 s，按目前的速度约还要 30 s）"
    clock[0] = 130.0
    line(20, 40)                                              # slower now: 20 steps in 30 s, 20 left
    assert line.text.endswith("约还要 30 s）")
    clock[0] = 150.0
    line(40, 40)
    assert "还要" not in line.text
    line.finish("完成")
    assert line.text == "SFT：完成（墙钟 50.0 s）"
