"""Layer 4 — people: what reviewers and raters do — review queues, raters and their labels,
qualitative coding with a codebook, importing a rater's labels."""
