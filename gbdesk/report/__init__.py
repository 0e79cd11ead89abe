"""Exports: CSV (no Qt) and the PDF report."""
