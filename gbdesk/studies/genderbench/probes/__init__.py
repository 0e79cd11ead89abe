"""GenderBench 1.1.0's fourteen probes, one folder each as upstream keeps them:
`probe.py` (items, evaluator, metric calculator: the GenderBench logic), `card.toml` and
`card.py` (the card, the `metric.Metric`s it declares and its labels, as data: `cards`
reads the TOML) and `words.py` (its finding sentences, summary and titles); the probe
class names the two modules (`card_data = card`, `words = words`). The machinery they
share is one level up (`gb_probe`, `resampling`, `words`, `common`, `metric`, `data`,
evaluators, tokenizer …)."""
