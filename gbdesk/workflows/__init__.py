"""Layer 5 — workflows: the long jobs a user starts — running a probe on a model, one-click
audits, importing answers made elsewhere, registering models, labelling passes."""
