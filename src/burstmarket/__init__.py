"""burstmarket: the market engine and market-data service for preemptible GPU capacity."""

__version__ = "0.1.0"
