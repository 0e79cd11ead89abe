"""GenderBench 1.1.0's fourteen probes, one module each: items, evaluator, metric
calculator and the metrics it declares (`metric.Metric`); the machinery they share is one
level up (`gb_probe`, `common`, `metric`, `data`, evaluators, tokenizer …)."""
