"""Layer 1 — maths: pure statistics (intervals and marks, resampling, prediction-powered
inference, agreement between raters). No store, no probes: numbers in, numbers out."""
