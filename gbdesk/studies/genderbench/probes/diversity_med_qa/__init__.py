"""GenderBench's `diversity_med_qa` probe as upstream keeps a probe, a folder: `probe` (items,
evaluator, metric calculator), `card` (card, metrics, labels as data), `words`."""
