"""The course's parts in real frameworks: the TRL and verl adapters, and a real TRL GRPOTrainer on CPU.

- the adapters on plain and conversational completions, with every keyword TRL passes and extra columns;
- the verl compute_score against the way verl loads and calls it (verl itself is not installed);
- one tiny Qwen2 model, warmed up once for this module, trained for a few GRPOTrainer steps: the rewards TRL
  logged equal the course's functions on the same completions, TRL's advantages are group_normalize, TRL's
  compute_loss for each loss_type is the matching aggregation, and the assistant mask of
  apply_chat_template is exercise 3's mask (and its loss the loss with shift_mask_for_clm);
- the page's GPU script (book/scripts/trl_grpo_gsm8k.py): real GRPOConfig and GRPOTrainer names, the pins of
  requirements.txt in its install line, and its CPU smoke mode (a tiny local model, two steps) run for real;
- nothing reaches the network, with the Hugging Face offline variables unset (the page and the smoke mode).
"""
from __future__ import annotations

import ast
import copy
import dataclasses
import importlib.util
import inspect
import json
import os
import re
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentrl_ref import accuracy_reward, build_loss_mask, format_reward, make_reward_fn, seed_reward_fn
from agentrl_ref.frameworks import (completion_text, compute_score, make_trl_composite_reward,
                                    make_verl_compute_score, trl_accuracy_reward, trl_composite_reward,
                                    trl_format_reward)
from course import ROOT
from grader.publish import release

GOOD = "<think>3+5=8</think><answer>\\boxed{8}</answer>"
TEXTS = [GOOD, "8", "<think>x</think><answer>\\boxed{9}</answer>", "", "<think>" * 50]
GOLDS = ["8", "8", "8", "8", "8"]


def trl_kwargs(n: int, logged: dict | None = None) -> dict:
    """Every keyword GRPOTrainer (trl 1.16) passes besides completions, plus two dataset columns."""
    return dict(prompts=["What is 3+5?"] * n, completion_ids=[[1, 2, 3]] * n, trainer_state=object(),
                log_extra=lambda column, values: None,
                log_metric=(lambda name, value: logged.__setitem__(name, value)) if logged is not None else None,
                answer=GOLDS[:n], level=["easy"] * n)


def conversational(texts):
    return [[{"role": "assistant", "content": t}] for t in texts]


# ---------------------------------------------------------------- TRL adapters


@pytest.mark.parametrize("shape", ["plain", "conversational"])
def test_trl_adapters_equal_the_course_functions(shape):
    completions = TEXTS if shape == "plain" else conversational(TEXTS)
    logged = {}
    kwargs = trl_kwargs(len(TEXTS), logged)
    assert trl_format_reward(completions=completions, **kwargs) == [format_reward(t) for t in TEXTS]
    assert trl_accuracy_reward(completions=completions, **kwargs) == [accuracy_reward(t, "8") for t in TEXTS]
    composite = seed_reward_fn()
    scores = [composite(t, "8") for t in TEXTS]
    assert trl_composite_reward(completions=completions, **kwargs) == [s["total"] for s in scores]
    assert set(logged) == {"composite_reward/fmt", "composite_reward/acc", "composite_reward/cos_len"}
    for key in ("fmt", "acc", "cos_len"):
        assert logged[f"composite_reward/{key}"] == pytest.approx(sum(s[key] for s in scores) / len(scores))


def test_composite_adapter_takes_any_course_composite_and_names_itself():
    fn = make_reward_fn({"format": 2.0, "right": 1.0}, {"format": lambda c, g: format_reward(c),
                                                         "right": accuracy_reward})
    reward = make_trl_composite_reward(fn, name="mine")
    assert reward.__name__ == "mine"   # TRL logs rewards/<__name__>/mean
    logged = {}
    assert reward(completions=[GOOD, "8"], **trl_kwargs(2, logged)) == [3.0, 0.0]
    assert logged == {"mine/format": 0.5, "mine/right": 0.5}
    assert reward(completions=[GOOD], answer=["8"]) == [3.0]   # log_metric is optional


def test_completion_text_of_a_multi_turn_completion():
    turns = [{"role": "assistant", "content": '<tool_call>{"name": "add"}</tool_call>'},
             {"role": "tool", "content": "8"},
             {"role": "assistant", "content": [{"type": "text", "text": "<think>t</think>"},
                                               {"type": "text", "text": "<answer>\\boxed{8}</answer>"}]}]
    assert completion_text(turns) == "<think>t</think><answer>\\boxed{8}</answer>"
    assert trl_accuracy_reward(completions=[turns], answer=["8"]) == [1.0]
    for bad in ([{"role": "tool", "content": "8"}], [{"role": "assistant", "content": 8}],
                [{"role": "assistant", "content": [{"type": "image"}]}], 8, None):
        with pytest.raises(ValueError):
            completion_text(bad)


def test_trl_adapters_refuse_misuse_clearly():
    with pytest.raises(ValueError, match="answer"):
        trl_accuracy_reward(completions=[GOOD])
    with pytest.raises(ValueError, match="2 completions but 1 answers"):
        trl_composite_reward(completions=[GOOD, GOOD], answer=["8"])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.sampled_from(list("<>/thinkaswer{}\\boxed0123.") + ["<think>", "</answer>", "\\boxed{"]),
                        max_size=40).map("".join), min_size=1, max_size=4))
def test_trl_adapters_never_raise_on_model_output(texts):
    kwargs = trl_kwargs(len(texts))
    kwargs["answer"] = ["1"] * len(texts)
    for reward in (trl_format_reward, trl_accuracy_reward, trl_composite_reward):
        out = reward(completions=texts, **kwargs)
        assert len(out) == len(texts) and all(isinstance(x, float) for x in out)
        assert reward(completions=conversational(texts), **kwargs) == out


def test_adapters_import_no_framework_and_no_torch():
    code = ("import sys, agentrl_ref.frameworks as f, agentrl_ref as a\n"
            "a.trl_composite_reward, a.make_verl_compute_score\n"
            "bad = sorted(m for m in sys.modules if m.split('.')[0] in\n"
            "             ('torch', 'numpy', 'trl', 'transformers', 'datasets', 'accelerate', 'verl'))\n"
            "assert not bad, bad\n")
    subprocess.run([sys.executable, "-c", code], check=True, cwd="/")


# ---------------------------------------------------------------- verl adapter


def test_verl_is_not_installed_here():
    assert importlib.util.find_spec("verl") is None  # the adapter is checked against verl's calls, below


def test_verl_compute_score_as_verl_loads_and_calls_it():
    """verl loads custom_reward_function.path by file path and calls the function with keyword arguments;
    a dict result gives the reward under "score" and every key is appended to the logged extra info."""
    path = ROOT / "agentrl_ref" / "frameworks" / "verl_score.py"
    spec = importlib.util.spec_from_file_location("custom_module", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    fn = getattr(module, "compute_score")
    assert not inspect.iscoroutinefunction(fn)
    reward_kwargs = {}  # custom_reward_function.reward_kwargs, merged over the call's keywords
    extra_info = {"num_turns": None, "rollout_reward_scores": {}, "index": 3}
    reward_extra_info: dict[str, list] = {}
    for text in TEXTS:
        score = fn(**{**dict(data_source="addition", solution_str=text, ground_truth="8", extra_info=extra_info),
                      **reward_kwargs})
        assert isinstance(score, dict)
        reward = score["score"]
        for key, value in score.items():
            reward_extra_info.setdefault(key, []).append(value)
        parts = seed_reward_fn()(text, "8")
        assert reward == parts["total"] and isinstance(reward, float)
        assert {k: v for k, v in score.items() if k != "score"} == {k: v for k, v in parts.items() if k != "total"}
    assert set(reward_extra_info) == {"score", "fmt", "acc", "cos_len"}
    # older callers pass the first three positionally and no extra_info
    assert compute_score("addition", GOOD, "8") == fn(data_source="addition", solution_str=GOOD, ground_truth="8")
    json.dumps(compute_score("x", GOOD, "8"))  # plain floats: loggable anywhere


def test_verl_compute_score_refuses_a_component_named_score():
    fn = make_verl_compute_score(make_reward_fn({"score": 1.0}, {"score": accuracy_reward}))
    with pytest.raises(ValueError, match="score"):
        fn(data_source="x", solution_str=GOOD, ground_truth="8")
    with pytest.raises(ValueError):
        compute_score(data_source="x", solution_str=None, ground_truth="8")


# ---------------------------------------------------------------- one tiny model, shared by this module


@pytest.fixture(scope="module")
def tiny():
    """The page's setup: task, tokenizer, chat template, Qwen2 from a config, SFT warm-up (same seeds)."""
    from agentrl_ref.teaching.shared.tiny_qwen import (addition_task, corpus, hf_tokenizer, sft_warmup, tiny_qwen,
                                                train_tokenizer)

    problems = addition_task(seed=0)
    tok = train_tokenizer(corpus(problems))
    tokenizer = hf_tokenizer(tok)
    model = tiny_qwen(len(tokenizer), seed=0)
    stats = sft_warmup(model, tok, problems, seed=0)
    return {"problems": problems, "tok": tok, "tokenizer": tokenizer, "model": model, "sft": stats}


@pytest.fixture(scope="module")
def run(tiny, tmp_path_factory):
    """Three GRPOTrainer steps with the course's composite reward, on a copy of the warmed-up model."""
    from agentrl_ref.teaching.frameworks.trl_grpo import cpu_grpo_args, run_grpo

    args = cpu_grpo_args(str(tmp_path_factory.mktemp("grpo")), steps=3, seed=0)
    return run_grpo(copy.deepcopy(tiny["model"]), tiny["tokenizer"], tiny["problems"], [trl_composite_reward], args)


CHATS = {
    "one tool call": None,  # filled with exercise 3's conversation below
    "system + user + answer": [{"role": "system", "content": "Answer briefly."},
                               {"role": "user", "content": "What is 3+5?"},
                               {"role": "assistant", "content": GOOD}],
    "two tool calls, Chinese": [
        {"role": "user", "content": "算一下 23*17 和 19*21。"},
        {"role": "assistant", "content": '<tool_call>{"name": "mul", "arguments": {"a": 23, "b": 17}}</tool_call>'},
        {"role": "tool", "content": "391"},
        {"role": "assistant", "content": '<tool_call>{"name": "mul", "arguments": {"a": 19, "b": 21}}</tool_call>'},
        {"role": "tool", "content": "399"},
        {"role": "assistant", "content": "结果是 391 和 399。"}],
    "user, assistant, user, assistant": [{"role": "user", "content": "What is 1+1?"},
                                         {"role": "assistant", "content": "2"},
                                         {"role": "user", "content": "And 2+2?"},
                                         {"role": "assistant", "content": "<think>2+2=4</think>4 😀"}],
}


def chats():
    from agentrl_ref.teaching.shared.chat_template import AGENT_CONVERSATION

    return {**CHATS, "one tool call": AGENT_CONVERSATION}


def test_sft_warmup_trains_the_format(tiny):
    assert tiny["sft"].last_loss < tiny["sft"].first_loss / 5


def test_chat_template_renders_what_the_course_renders(tiny):
    from agentrl_ref.teaching.shared.chat_template import render_chatml

    tokenizer = tiny["tokenizer"]
    for messages in chats().values():
        assert tokenizer.apply_chat_template(messages, tokenize=False) == render_chatml(messages)[0]
        prompt = tokenizer.apply_chat_template(messages[:1], tokenize=False, add_generation_prompt=True)
        assert prompt == render_chatml(messages[:1])[0] + "<|im_start|>assistant\n"
    # the format tags are ordinary tokens: TRL's skip_special_tokens decoding keeps them
    assert tokenizer.decode(tokenizer.encode(GOOD, add_special_tokens=False), skip_special_tokens=True) == GOOD


def test_mask_identity_on_several_conversations(tiny):
    from agentrl_ref.teaching.frameworks.trl_grpo import mask_rows

    rows = mask_rows(tiny["tokenizer"], chats(), tiny["model"])
    for row in rows:
        assert row["same_ids"], row["name"]
        assert row["hf"] == row["course"], row["name"]
        assert sum(row["course"]) > 0
        assert row["hf_loss"] == pytest.approx(row["course_loss"], rel=1e-5), row["name"]


message_text = st.lists(st.sampled_from(list("ab 12+=?.\n{}\"<>/é中") + ["<think>", "\n\n", "\U0001F600"]),
                        max_size=12).map("".join)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["system", "user", "assistant", "tool"]), message_text), min_size=1,
                max_size=4))
def test_mask_identity_on_random_conversations(tiny, messages):
    from agentrl_ref.teaching.shared.chat_template import role_spans_from_tokens, tokenize_chat

    messages = [{"role": r, "content": c} for r, c in messages]
    out = tiny["tokenizer"].apply_chat_template(messages, tokenize=True, return_dict=True,
                                                return_assistant_tokens_mask=True)
    try:
        chat = tokenize_chat(messages, tiny["tok"])
    except ValueError as error:  # only a token across a part boundary is refused, and transformers marks it 1
        assert "straddles" in str(error)
        return
    assert list(chat.ids) == list(out["input_ids"])
    assert build_loss_mask(list(chat.ids), role_spans_from_tokens(chat)) == list(out["assistant_masks"])


def test_straddling_token_marked_by_transformers_refused_by_the_course(tiny):
    from agentrl_ref.teaching.shared.chat_template import tokenize_chat

    messages = [{"role": "user", "content": "What is 3+5?"},
                {"role": "assistant", "content": "\n\nLet me think.\n\n\nSo the answer is 8."}]
    out = tiny["tokenizer"].apply_chat_template(messages, tokenize=True, return_dict=True,
                                                return_assistant_tokens_mask=True)
    text = tiny["tokenizer"].apply_chat_template(messages, tokenize=False)
    header_end = text.rindex("<|im_start|>assistant\n") + len("<|im_start|>assistant\n")
    enc = tiny["tokenizer"](text, add_special_tokens=False, return_offsets_mapping=True)
    straddling = [i for i, (a, b) in enumerate(enc["offset_mapping"]) if a < header_end < b]
    assert len(straddling) == 1
    assert tiny["tokenizer"].decode(out["input_ids"][straddling[0]]) == "\n\n"
    assert out["assistant_masks"][straddling[0]] == 1   # half template, half model: transformers trains it
    with pytest.raises(ValueError, match="straddles"):
        tokenize_chat(messages, tiny["tok"])


def test_grpo_logged_rewards_are_the_course_functions(run, tiny):
    from agentrl_ref.teaching.frameworks.trl_grpo import answers_of, completions_of, reward_rows

    assert len(run.steps) == len(run.batches) == 3
    rows = reward_rows(run, tiny["problems"], seed_reward_fn())
    for row in rows:
        for key in ("fmt", "acc", "cos_len", "total"):
            assert row["trl"][key] == pytest.approx(row["course"][key], abs=1e-6), (row["step"], key)
    texts = [t for k in range(3) for t in completions_of(run, k)]
    golds = [a for k in range(3) for a in answers_of(run, k, tiny["problems"])]
    assert len(texts) == 3 * 16
    assert 0 < sum(format_reward(t) for t in texts) and 0 < sum(accuracy_reward(t, g) for t, g in zip(texts, golds))
    # the adapter judged what TRL decoded: conversational prompts, one assistant message per completion
    assert run.log_history[0]["rewards/composite_reward/mean"] == pytest.approx(
        sum(trl_composite_reward(completions=conversational(completions_of(run, 0)),
                                 answer=answers_of(run, 0, tiny["problems"]))) / 16, abs=1e-6)


def test_grpo_advantages_are_group_normalize(run, tiny):
    import torch

    from agentrl_ref import group_normalize
    from agentrl_ref.teaching.frameworks.trl_grpo import TRL_EPS, advantage_rows

    G = run.trainer.args.num_generations
    for row in advantage_rows(run, tiny["problems"], seed_reward_fn(), G):
        trl, ours = row["trl"].view(-1, G), group_normalize(row["totals"], G, eps=TRL_EPS).view(-1, G)
        std = row["totals"].view(-1, G).std(dim=1, keepdim=True)
        # float32 (TRL) against float64 (course): the rounding error is divided by the group's std + eps
        tolerance = 1e-5 + 1e-7 / (std + TRL_EPS)
        assert torch.all((trl - ours).abs() <= tolerance), (row["step"], trl - ours, std)
        if (std > 1e-2).any():  # where the std is not tiny, the other eps is visibly different
            other = group_normalize(row["totals"], G).view(-1, G)
            assert ((trl - other).abs() > tolerance)[(std > 1e-2).squeeze(1)].any()


def test_grpo_loss_types_are_the_three_aggregations(run):
    import torch

    from agentrl_ref.teaching.frameworks.trl_grpo import loss_type_rows

    B = run.batches[0]["advantages"].shape[0]
    for advantages in (None, torch.linspace(-1.0, 2.0, B)):   # the batch's own, and values not summing to 0
        rows = loss_type_rows(run, step=1, advantages=advantages)
        assert {r["loss_type"] for r in rows} == {"grpo", "bnpo", "dapo", "dr_grpo"}
        for r in rows:
            assert r["trl"] == pytest.approx(r["course"], rel=1e-5, abs=1e-7), r
    assert run.trainer.loss_type == "dapo"  # restored


def test_grpo_with_plain_text_prompts(tiny, tmp_path):
    """Plain prompts (the ChatML text up to the generation prompt): TRL passes completions as str."""
    from agentrl_ref.teaching.frameworks.trl_grpo import completions_of, cpu_grpo_args, reward_rows, run_grpo

    args = cpu_grpo_args(str(tmp_path), steps=1, seed=1)
    seen = []

    def trl_format_reward_spy(completions, **kwargs):
        seen.extend(completions)
        return trl_format_reward(completions, **kwargs)

    plain = run_grpo(copy.deepcopy(tiny["model"]), tiny["tokenizer"], tiny["problems"],
                     [trl_composite_reward, trl_format_reward_spy], args, conversational=False)
    assert seen and all(isinstance(c, str) for c in seen)
    assert seen == completions_of(plain, 0)
    row = reward_rows(plain, tiny["problems"], seed_reward_fn())[0]
    assert row["trl"]["total"] == pytest.approx(row["course"]["total"], abs=1e-6)
    assert plain.steps[0]["rewards/trl_format_reward_spy/mean"] == pytest.approx(row["course"]["fmt"], abs=1e-6)


GPU_SCRIPT = ROOT / "book" / "scripts" / "trl_grpo_gsm8k.py"


def _pins() -> dict[str, str]:
    pins = dict(re.findall(r"^([A-Za-z0-9_.-]+)==([^\s#]+)", (ROOT / "requirements.txt").read_text(encoding="utf-8"),
                           flags=re.M))
    return {name.lower(): version for name, version in pins.items()}


def test_the_gpu_script_uses_real_argument_names_and_the_pins_it_was_checked_against():
    """The GPU script (its GPU path is not executed here): every GRPOConfig setting it names, GPU or smoke, is a
    GRPOConfig field, GRPOTrainer gets only its parameters, and its install line is requirements.txt's pins and
    the course package's version."""
    from trl import GRPOConfig, GRPOTrainer

    source = GPU_SCRIPT.read_text(encoding="utf-8")
    tree = ast.parse(source)
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call)]
    named = {kw.arg for node in calls if getattr(node.func, "id", None) == "dict" for kw in node.keywords}
    named |= {kw.arg for node in calls if getattr(node.func, "attr", None) == "update" for kw in node.keywords}
    fields = {f.name for f in dataclasses.fields(GRPOConfig)}
    assert {"use_cpu", "bf16", "loss_type", "scale_rewards", "max_steps", "use_vllm"} <= named <= fields, \
        named - fields
    trainer = [node for node in calls if getattr(node.func, "id", None) == "GRPOTrainer"]
    assert len(trainer) == 1
    assert {kw.arg for kw in trainer[0].keywords} <= set(inspect.signature(GRPOTrainer).parameters)
    pins, install = _pins(), re.findall(r"pip install (.+)", ast.get_docstring(tree))
    named_pins = dict(re.findall(r"([a-z][a-z0-9_-]*)==([0-9][^\s]*)", " ".join(install)))
    assert named_pins == {name: pins[name] for name in ("torch", "trl", "transformers", "accelerate", "datasets",
                                                        "tokenizers")}
    version = release.course_settings()[1]
    assert f"agentrl_ref-{version}-py3-none-any.whl" in source


# ---------------------------------------------------------------- no network


NO_NETWORK = r"""
import os, socket, sys
from agentrl_ref.teaching.shared.tiny_qwen import HF_OFFLINE
assert not set(HF_OFFLINE) & set(os.environ), "the offline variables must be unset here"
import huggingface_hub.constants, transformers, trl, datasets  # they read the variables now: online mode
assert not huggingface_hub.constants.HF_HUB_OFFLINE and not huggingface_hub.constants.HF_HUB_DISABLE_TELEMETRY
attempts = []
def refuse(*args, **kwargs):
    attempts.append(args[:2])
    raise OSError("network access in a test")
socket.socket.connect = socket.socket.connect_ex = refuse
socket.create_connection = socket.getaddrinfo = refuse
from agentrl_ref.frameworks import trl_composite_reward
from agentrl_ref.teaching.shared.tiny_qwen import (
    addition_task, corpus, hf_tokenizer, sft_warmup, tiny_qwen, train_tokenizer,
)
from agentrl_ref.teaching.frameworks.trl_grpo import cpu_grpo_args, run_grpo
problems = addition_task()
tok = train_tokenizer(corpus(problems))
tokenizer = hf_tokenizer(tok)
model = tiny_qwen(len(tokenizer))
sft_warmup(model, tok, problems, steps=20)
run = run_grpo(model, tokenizer, problems, [trl_composite_reward], cpu_grpo_args(sys.argv[1], steps=1))
assert len(run.steps) == 1
assert not set(HF_OFFLINE) & set(os.environ), "the page's offline switch is scoped: unset again after the run"
# the GPU script's smoke mode, in the same process (the libraries online): two steps, nothing downloaded
import runpy
history = runpy.run_path(sys.argv[2])["main"](["--smoke"])
print("smoke steps:", len([row for row in history if "loss" in row]))
assert not set(HF_OFFLINE) & set(os.environ)
print("attempts:", attempts)
assert not attempts, attempts
"""


def test_nothing_reaches_the_network_with_the_offline_variables_unset(tmp_path):
    """The page's machinery and the GPU script's CPU smoke mode (book/scripts/trl_grpo_gsm8k.py --smoke: the same
    script as the GPU run, a tiny local model, two steps), with every socket refused."""
    from agentrl_ref.teaching.shared.tiny_qwen import HF_OFFLINE

    # CI=1 alone would stop TRL's telemetry ping (.ci/run sets it): unset too, with the other opt-outs
    opt_outs = set(HF_OFFLINE) | {"CI", "DISABLE_TELEMETRY", "DO_NOT_TRACK"}
    env = {k: v for k, v in os.environ.items() if k not in opt_outs}
    env["HF_HOME"] = str(tmp_path / "hf-home")  # an empty cache: nothing could be found there either
    proc = subprocess.run([sys.executable, "-c", NO_NETWORK, str(tmp_path / "out"), str(GPU_SCRIPT)],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "smoke steps: 2" in proc.stdout and "attempts: []" in proc.stdout
    assert not (tmp_path / "hf-home").exists() or not any((tmp_path / "hf-home").rglob("*.safetensors"))
