"""The frameworks page (book/frameworks.md): TRL's GRPOTrainer on the tiny model (teaching.shared.tiny_qwen)."""
