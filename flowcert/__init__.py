"""flowcert: symbolic-numeric verification of transformer and recurrent-network dynamics.

Layers (dependencies point one way):
``symbolic <- numeric, gpu <- certificates <- flowcert (catalogue, API, CLI) <- reports``.
"""
__version__ = "0.1.0"
