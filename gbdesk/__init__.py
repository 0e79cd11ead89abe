"""gbdesk: offline auditing of local language models for gender and intersectional bias."""

__version__ = "0.1.0"
