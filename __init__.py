"""fastslow: route Chinese voice-assistant queries (快/慢/模糊, XA4.1), parse automations, propose captures.

The repository root is this package: ``features/``, ``models/``, ``serve/`` and ``data/`` install as
``fastslow.features``, ``fastslow.models``, ``fastslow.serve`` and ``fastslow.data`` (see pyproject.toml).
"""

__version__ = "0.2.0"
