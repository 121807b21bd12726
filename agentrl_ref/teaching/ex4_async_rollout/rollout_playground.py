"""Exercise 4's playground: ipywidgets controls around rollout_sim (the simulated clock), in JupyterLab.

    from agentrl_ref.teaching.ex4_async_rollout.rollout_playground import RolloutPlayground
    RolloutPlayground()            # displays the controls, runs once, shows the figure

Sliders set the simulation (workers, generation time and its spread, trainer step time, batch size,
capacity, max staleness), a switch picks sync / async / both, Run runs it with a progress bar.
The simulation is the real AsyncRolloutBuffer on a simulated clock (rollout_sim), so a run takes well
under a second and the same seed gives the same figure. ipywidgets is imported only here.
"""
from __future__ import annotations

import html

from agentrl_ref.teaching.ex4_async_rollout.rollout_sim import MODES, SimConfig, SimResult, run_modes

BOTH = "sync + async"
MODE_LABELS = {"sync": "同步", "async": "异步", BOTH: "同步 + 异步"}  # what the page shows; values stay English
# The dropdown's "off" needs a value of its own: in ipywidgets 8 a Dropdown whose value is None has
# nothing selected (it shows up empty), even when an option's value is None. config() maps OFF to None.
OFF = "off"
STALENESS_OPTIONS = [("off", OFF), ("0", 0), ("1", 1), ("2", 2), ("4", 4), ("8", 8)]


def _staleness_options(current: int | None) -> list[tuple[str, object]]:
    """The dropdown's options, with a setting that is not among them (e.g. max_staleness=3) added in order."""
    if current is None or any(value == current for _, value in STALENESS_OPTIONS):
        return list(STALENESS_OPTIONS)
    numbers = sorted([value for _, value in STALENESS_OPTIONS if value != OFF] + [current])
    return [("off", OFF)] + [(str(n), n) for n in numbers]


class RolloutPlayground:
    """The controls, a Run button, a progress bar, a summary and the figure of the last run."""

    def __init__(self, config: SimConfig = SimConfig(), *, run_now: bool = True):
        import ipywidgets as w

        wide = {"description_width": "9em"}
        layout = w.Layout(width="25em")
        self.n_workers = w.IntSlider(config.n_workers, min=1, max=32, description="rollout worker 数",
                                     style=wide, layout=layout)
        self.gen_time = w.FloatSlider(config.gen_time, min=0.1, max=10.0, step=0.1, description="生成一条（秒）",
                                      style=wide, layout=layout)
        self.gen_spread = w.FloatSlider(config.gen_spread, min=0.0, max=2.0, step=0.1,
                                        description="生成耗时离散度", style=wide, layout=layout,
                                        tooltip="变异系数：标准差 / 均值；0 表示每条一样长")
        self.train_time = w.FloatSlider(config.train_time, min=0.1, max=20.0, step=0.1,
                                        description="训练一步（秒）", style=wide, layout=layout)
        self.batch_size = w.IntSlider(config.batch_size, min=1, max=128, description="batch 大小",
                                      style=wide, layout=layout)
        self.capacity = w.IntSlider(config.capacity, min=1, max=512, description="队列容量",
                                    style=wide, layout=layout)
        self.max_staleness = w.Dropdown(options=_staleness_options(config.max_staleness),
                                        value=OFF if config.max_staleness is None else config.max_staleness,
                                        description="最大陈旧度", style=wide, layout=layout)
        self.n_steps = w.IntSlider(config.n_steps, min=10, max=300, step=10, description="训练步数",
                                   style=wide, layout=layout)
        self.seed = w.IntText(config.seed, description="随机种子", style=wide, layout=layout)
        self.mode = w.ToggleButtons(options=[(MODE_LABELS[m], m) for m in (*MODES, BOTH)], value=BOTH,
                                    description="调度", style=wide)
        self.run_button = w.Button(description="Run", button_style="primary", icon="play")
        self.progress = w.IntProgress(value=0, min=0, max=100, description="进度", style=wide)
        self.summary = w.HTML()
        self.output = w.Output()
        self.run_button.on_click(lambda _button: self.run())

        left = w.VBox([self.n_workers, self.gen_time, self.gen_spread, self.train_time, self.n_steps])
        right = w.VBox([self.batch_size, self.capacity, self.max_staleness, self.seed])
        self.widget = w.VBox([w.HBox([left, right]), self.mode, w.HBox([self.run_button, self.progress]),
                              self.summary, self.output])
        self.results: dict[str, SimResult] = {}
        self.figure = None
        self.runs = 0
        if run_now:
            self.run()

    def config(self) -> SimConfig:
        """The settings the controls show now (mode is set per run)."""
        return SimConfig(n_workers=self.n_workers.value, gen_time=self.gen_time.value,
                         gen_spread=self.gen_spread.value, train_time=self.train_time.value,
                         batch_size=self.batch_size.value, capacity=self.capacity.value,
                         max_staleness=self._staleness(), n_steps=self.n_steps.value,
                         seed=int(self.seed.value))

    def _staleness(self) -> int | None:
        """The dropdown as SimConfig.max_staleness: None for "off" (or for no selection at all)."""
        value = self.max_staleness.value
        return None if value in (OFF, None) else int(value)

    def _on_progress(self, done: int, total: int) -> None:
        value = round(100 * done / total)
        if value != self.progress.value:
            self.progress.value = value

    def run(self) -> dict[str, SimResult]:
        """Simulate with the current settings, redraw the figure and the summary; return the results."""
        config = self.config()
        modes = MODES if self.mode.value == BOTH else (self.mode.value,)
        self.progress.value = 0
        self.run_button.disabled = True
        try:
            if config.capacity < config.batch_size:
                self.summary.value = ("<b>队列容量小于 batch 大小</b>：参考实现在构造时就报 ValueError；"
                                      "原页面的类不会报错，而是让 trainer 永远等下去。把容量调到至少 batch 大小。")
                self._clear_figure()  # the last figure belongs to other settings: it must not stay on screen
                return self.results
            self.results = run_modes(config, modes, progress=self._on_progress)
            self.runs += 1
            self.summary.value = _summary_html(self.results)
            self._show_figure()
        finally:
            self.run_button.disabled = False
        return self.results

    def _clear_figure(self) -> None:
        """No results for the current settings: drop the last run's figure and results, empty the Output."""
        import matplotlib.pyplot as plt

        if self.figure is not None:
            plt.close(self.figure)
        self.figure = None
        self.results = {}
        from IPython import get_ipython

        if get_ipython() is not None:  # in a kernel: tell the front end to empty the Output widget
            self.output.clear_output()
        self.output.outputs = ()

    def _show_figure(self) -> None:
        import matplotlib.pyplot as plt

        from agentrl_ref.teaching.ex4_async_rollout.rollout_plots import plot_results

        if self.figure is not None:
            plt.close(self.figure)
        self.figure = plot_results(self.results)
        plt.close(self.figure)  # shown through the Output widget only, never by the inline backend
        from IPython import get_ipython
        from IPython.display import display

        if get_ipython() is None:  # plain Python (tests): keep the figure, there is nowhere to show it
            return
        self.output.clear_output(wait=True)
        with self.output:
            display(self.figure)

    def _ipython_display_(self):
        from IPython.display import display

        display(self.widget)


def _summary_html(results: dict[str, SimResult]) -> str:
    rows = []
    for mode, r in results.items():
        s = r.summary()
        rows.append(
            f"<tr><td><b>{html.escape(MODE_LABELS.get(mode, mode))}</b></td>"
            f"<td>{s['trainer_busy']:.0%}</td><td>{s['worker_busy']:.0%}</td>"
            f"<td>{s['throughput']:.2f}</td><td>{s['dropped_overflow']}</td><td>{s['dropped_stale']}</td>"
            f"<td>{s['mean_lag']:.2f}</td></tr>")
    return ("<table><tr><th>调度</th><th>trainer 忙碌</th><th>worker 忙碌</th><th>吞吐（条/秒）</th>"
            "<th>溢出丢弃</th><th>过期丢弃</th><th>平均版本差</th></tr>" + "".join(rows) + "</table>")
