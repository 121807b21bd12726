"""Realistic wrong answers to exercise 10: blank index -> wrong text, and the test cell that must catch it.

Blanks: 0 = TODO 1 (a log-prob per id), 1 = TODO 2 (versions never go backwards), 2 = TODO 3 (the behaviour
log-probs appended), 3 = TODO 4 (each new token's version); 4 = TODO 5 (staleness against the trainer's version),
5 = TODO 6 (a token from the future), 6 = TODO 7 (the oldest token); 7 = TODO 8 (admission by the oldest token).
"""
MUTATIONS = {
    "one version per trajectory: the first": (
        {3: "self.versions + [self.versions[0] if self.versions else version] * len(ids)"}, "test_extend"),
    "one version per trajectory: the last": ({3: "[version] * (len(self.versions) + len(ids))"}, "test_extend"),
    "only the newest segment's behaviour log-probs": ({2: "list(logps)"}, "test_extend"),
    "lengths not checked": ({0: "False"}, "test_misuse"),
    "versions compared with the first token": ({1: "self.versions and version < self.versions[0]"}, "test_misuse"),
    "staleness against the trajectory's own start": ({4: "versions - versions[0]"}, "test_staleness"),
    "staleness against the trajectory's newest token": ({4: "versions.max() - versions"}, "test_staleness"),
    "staleness with the sign reversed": ({4: "versions - current_version"}, "test_staleness"),
    "tokens from the future let through": ({5: "False"}, "test_staleness"),
    "the oldest by the newest token": ({6: "int(staleness.min())"}, "test_oldest"),
    "admission by the newest token": (
        {7: "int(token_staleness(versions, current_version).min()) <= max_staleness"}, "test_admit"),
    "admission with a strict inequality": ({7: "oldest_staleness(versions, current_version) < max_staleness"},
                                           "test_admit"),
}

# The one hint every failing visible test gives for each mistake (tests/test_hints.py, tests/test_nbgrader.py).
HINTS = {
    "one version per trajectory: the first": "每个 token 记下**生成它的**版本",
    "one version per trajectory: the last": "只给这一段的新 token 记 version",
    "only the newest segment's behaviour log-probs": "前面几段的行为 log-prob 要原样留着",
    "lengths not checked": "每个 id 都要有它的 log-prob",
    "versions compared with the first token": "和这条轨迹**最后一个** token 的版本比",
    "staleness against the trajectory's own start": "和这条轨迹自己开始时的版本比",
    "staleness against the trajectory's newest token": "不是和这条轨迹自己最新的 token 比",
    "staleness with the sign reversed": "方向是 trainer 的版本减 token 的版本",
    "tokens from the future let through": "版本比 trainer 还新的 token 不可能存在",
    "the oldest by the newest token": "取 max，不是 min",
    "admission by the newest token": "准入看**最旧**的 token",
    "admission with a strict inequality": "用 <=，不是 <",
}
