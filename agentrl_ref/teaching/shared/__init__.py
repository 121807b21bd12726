"""What several pages use: Chinese in figures, executed tables, progress lines, the ChatML template and tokenizer,
the tiny Qwen2 chat model."""
