"""Layer 3 — analysis: a run's labels → metrics, flat facts, findings, comparisons between
runs, PPI metrics and label accuracy. Reads the store through its typed methods."""
