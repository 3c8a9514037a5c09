"""burstmarket: the market engine and market-data service for preemptible GPU capacity."""

from importlib.metadata import version

__version__ = version(__name__)
"""The installed package's version: pyproject.toml says it once."""
