"""Realistic wrong answers to exercise 4: blank index -> wrong text, and the test cell that must catch it.

Blanks: 0 = the deque (self.buf = _____), 1 = the wake-up line in put(), 2 = the wait_for predicate.
"""
MUTATIONS = {
    "deque() without maxlen": ({0: "deque()"}, "test_drops_oldest_when_full"),
    "deque(max_capacity): the int is the iterable": ({0: "deque(max_capacity)"}, "test_seed_harness"),
    "capacity of one batch: maxlen=batch_size": ({0: "deque(maxlen=batch_size)"}, "test_several_producers"),
    "notify() where notify_all() is needed": ({1: "self.cond.notify()"}, "test_several_trainers"),
    "notify_all named but not called": ({1: "self.cond.notify_all"}, "test_seed_harness"),
    "strict > in the predicate": ({2: "len(self.buf) > self.batch_size"}, "test_producers_finish"),
    "== instead of >=": ({2: "len(self.buf) == self.batch_size"}, "test_fifo_oldest_first"),
    "any data is enough: len > 0": ({2: "len(self.buf) > 0"}, "test_no_partial_batch"),
    "no waiting at all: lambda: True": ({2: "True"}, "test_spurious_wakeup"),
    # "waking a trainer before a whole batch is there is useless": true for trainers only; an observer
    # waiting on the same Condition for "at least one item" then sleeps until a batch is full (or forever)
    "notify only when a full batch is ready": ({1: "if len(self.buf) >= self.batch_size: self.cond.notify_all()"},
                                               "test_several_trainers"),
}

# The one hint every failing visible test gives for each mistake (tests/test_hints.py, tests/test_nbgrader.py).
HINTS = {
    "deque() without maxlen": "deque(maxlen=max_capacity) 满了以后",
    "deque(max_capacity): the int is the iterable": "deque 的第一个参数是初始元素",
    "capacity of one batch: maxlen=batch_size": "容量是 max_capacity，不是 batch_size",
    "notify() where notify_all() is needed": "要用 notify_all()，不是 notify()",
    "notify_all named but not called": "带括号才是调用",
    "strict > in the predicate": "条件要用 >=，不是 >",
    "== instead of >=": "不是“恰好 batch_size 条”（==）",
    "any data is enough: len > 0": "条件太宽",
    "no waiting at all: lambda: True": "条件太宽",
    "notify only when a full batch is ready": "每次 put 都要 notify_all()",
}
