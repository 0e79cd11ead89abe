"""Layer 0 — support: errors, paths, logging, limits, number formatting, glossary, CSV files
and input guards. Imports nothing else of gbdesk; every other package may import it."""
