"""GenderBench 1.1.0's fourteen probes, one folder each as upstream keeps them:
`probe.py` (items, evaluator, metric calculator: the GenderBench logic), `card.py` (the
card, the `metric.Metric`s it declares and its labels, as data) and `words.py` (its finding
sentences, summary and titles). The machinery they share is one level up (`gb_probe`,
`resampling`, `words`, `common`, `metric`, `data`, evaluators, tokenizer …)."""
