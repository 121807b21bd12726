"""Exercise 3's page (book/ex3_loss_mask.ipynb): the loss mask over real tokens (the conversation and its
tokenizer are shared: teaching.shared.chat_template)."""
