"""gbdesk: offline auditing of local language models for gender bias, alone and combined
with other identities."""

__version__ = "0.1.0"
