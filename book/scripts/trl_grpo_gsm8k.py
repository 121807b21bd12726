"""用 TRL 在 GSM8K 上做 GRPO：一块 GPU 上的 Qwen2.5-0.5B-Instruct，奖励是课程的组合奖励
（练习 1 的格式、练习 2 的正确性、练习 5 的 cosine 长度项：agentrl_ref.frameworks）。

安装（课程页面 book/frameworks.md 核对过的版本）。torch 先装：在有 GPU 的 Linux 机器上，
PyPI 的 torch 2.13.0 就是 CUDA 版。

    pip install torch==2.13.0
    pip install trl==1.16.0 transformers==5.24.0 accelerate==1.15.0 datasets==5.2.0 tokenizers==0.23.3
    pip install --no-deps agentrl_ref-0.2.0-py3-none-any.whl   # 课程包：课程网站 dist/ 下的 wheel，
                                                               # 或者在课程仓库里 pip install --no-deps -e .

运行：

    python trl_grpo_gsm8k.py            一块 GPU；从 Hugging Face Hub 下载模型和 GSM8K
    python trl_grpo_gsm8k.py --vllm     改用 vLLM 生成（pip install vllm：要和你的 torch 配套；这里没有核对过）
    python trl_grpo_gsm8k.py --smoke    CPU、不联网、几秒钟：当场造一个小 Qwen2，8 道 GSM8K 格式的小题，训练两步，
                                        走的是同一条代码路径，只是设置小

哪些跑过、在哪里跑过：课程的每一次 `make test` 都跑 `--smoke`（tests/test_frameworks.py），用的就是上面这些版本。
GPU 这条路在那里从没执行过（没有 GPU，也不联网）：它和冒烟模式只差 `smoke_setup` 换掉的那几样
（模型、数据和它改的几项设置）。
"""
from __future__ import annotations

import argparse
import contextlib
import tempfile

MODEL = "Qwen/Qwen2.5-0.5B-Instruct"
SYSTEM = ("Think step by step inside <think></think>, then give the final "
          "answer inside <answer>\\boxed{}</answer>.")
# 一块 GPU 的 GRPOConfig。课程页面讨论过的几项（bf16、学习率、loss_type、scale_rewards、beta）保留 TRL 的默认值；
# 页面自己在 CPU 上跑时调大了学习率、关掉了 bf16。
SETTINGS = dict(
    output_dir="grpo-qwen2.5-0.5b-gsm8k",
    use_cpu=False,                    # 用 GPU
    bf16=True,                        # TRL 的默认值
    learning_rate=1e-6,               # TRL 的默认值
    per_device_train_batch_size=16,
    num_generations=8,                # 每道题采样几个回答：一组
    max_completion_length=1024,       # 留够写推理的长度
    loss_type="dapo",                 # 或者 "grpo"、"dr_grpo"（页面第 6 节）
    scale_rewards="group",            # Dr. GRPO 用 "none"
    beta=0.0,                         # 没有 KL 项，也不需要参考模型
    mask_truncated_completions=True,  # 被截断的回答不计损失
    logging_steps=10,
    report_to="none",
)
# 冒烟模式的数据：GSM8K 的两列，答案照 GSM8K 的习惯写在 "#### " 之后；题目短，小模型也放得下。
SMOKE_PROBLEMS = [
    ("Tom has 3 apples and buys 5 more. How many apples does he have?", "3 + 5 = 8\n#### 8"),
    ("A box holds 4 pens. How many pens are in 2 boxes?", "4 * 2 = 8\n#### 8"),
    ("Ann reads 6 pages a day. How many pages does she read in 3 days?", "6 * 3 = 18\n#### 18"),
    ("There are 9 birds and 2 fly away. How many are left?", "9 - 2 = 7\n#### 7"),
    ("A cake is cut into 12 slices and 5 are eaten. How many slices remain?", "12 - 5 = 7\n#### 7"),
    ("Sam has 7 coins and finds 6 more. How many coins does he have?", "7 + 6 = 13\n#### 13"),
    ("Each bag has 5 oranges. How many oranges are in 4 bags?", "5 * 4 = 20\n#### 20"),
    ("A school has 1,200 students and 200 go home early. How many stay?", "1,200 - 200 = 1,000\n#### 1,000"),
]


def to_prompt(row: dict) -> dict:
    """GSM8K 的一行变成 TRL 的对话式 prompt；标准答案取 '####' 之后的部分（去掉千位逗号）。"""
    question = [{"role": "system", "content": SYSTEM},
                {"role": "user", "content": row["question"]}]
    return {"prompt": question, "answer": row["answer"].split("####")[-1].strip().replace(",", "")}


def gsm8k():
    from datasets import load_dataset

    return load_dataset("openai/gsm8k", "main", split="train")


def smoke_setup(folder: str):
    """CPU 冒烟模式的 (模型路径, 数据集, 设置)：一个小 Qwen2 和它的分词器存进 folder（课程的
    agentrl_ref.teaching.shared.tiny_qwen，和页面上一样），数据是 SMOKE_PROBLEMS，小 batch 训练两步。"""
    from datasets import Dataset

    from agentrl_ref.teaching.shared.tiny_qwen import addition_task, corpus, hf_tokenizer, tiny_qwen, train_tokenizer

    texts = [SYSTEM] + [q + " " + a for q, a in SMOKE_PROBLEMS]
    tokenizer = hf_tokenizer(train_tokenizer(corpus(addition_task()) + texts * 5))
    model = tiny_qwen(len(tokenizer))
    model.config.max_position_embeddings = 512  # 旋转位置编码：这里的 prompt 比页面上的长
    for config in (model.config, model.generation_config):
        config.eos_token_id, config.pad_token_id = tokenizer.eos_token_id, tokenizer.pad_token_id
        config.bos_token_id = None
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    dataset = Dataset.from_list([{"question": q, "answer": a} for q, a in SMOKE_PROBLEMS])
    settings = dict(output_dir=folder + "/out", use_cpu=True, bf16=False, learning_rate=5e-4,
                    per_device_train_batch_size=4, num_generations=4, max_completion_length=16, max_steps=2,
                    logging_steps=1, save_strategy="no", disable_tqdm=True, dataloader_num_workers=0)
    return folder, dataset, settings


def main(argv: list[str] | None = None) -> list[dict]:
    """训练；返回 trainer 的日志（每一步一个 dict，最后是汇总）。"""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true", help="CPU、不联网、小模型、两步")
    parser.add_argument("--vllm", action="store_true", help="用 vLLM 生成（和训练在同一块 GPU 上）")
    args = parser.parse_args(argv)

    with contextlib.ExitStack() as stack:
        settings = dict(SETTINGS)
        if args.smoke:
            from agentrl_ref.teaching.shared.tiny_qwen import hf_offline

            stack.enter_context(hf_offline())  # 不下载任何东西，也不向 Hub 发使用统计
            model, dataset, overrides = smoke_setup(stack.enter_context(tempfile.TemporaryDirectory()))
            settings.update(overrides)
        else:
            model, dataset = MODEL, gsm8k()
        if args.vllm:
            settings.update(use_vllm=True, vllm_mode="colocate")

        from trl import GRPOConfig, GRPOTrainer

        from agentrl_ref.frameworks import trl_composite_reward
        # 只压下 trl 1.16 自己触发的 FutureWarning
        from agentrl_ref.teaching.frameworks.trl_grpo import quiet_transformers

        dataset = dataset.map(to_prompt, remove_columns=dataset.column_names)
        with quiet_transformers():
            trainer = GRPOTrainer(model=model, reward_funcs=[trl_composite_reward], args=GRPOConfig(**settings),
                                  train_dataset=dataset)
            trainer.train()
        return list(trainer.state.log_history)


if __name__ == "__main__":
    steps = [row for row in main() if "loss" in row]
    print(f"训练了 {len(steps)} 步；最后一步的平均奖励 {steps[-1]['reward']:.4f}" if steps else "没有训练任何一步")
