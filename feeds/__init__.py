"""Every published feed, one declaration per file, read by burstmarket.shipped (the format:
burstmarket/feed/catalog.py).

This folder installs as the package `burstmarket.feeds` (pyproject.toml maps it); this file
makes it a regular package, which an editable install finds where a namespace package is not.
"""
