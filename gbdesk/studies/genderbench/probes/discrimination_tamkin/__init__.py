"""GenderBench's `discrimination_tamkin` probe as upstream keeps a probe, a folder: `probe` (items,
evaluator, metric calculator), `card` (card, metrics, labels as data), `words`."""
