"""Reusable detectors (no Qt, no model)."""
