"""Every query and view of the store, one statement per file, read by name (burstmarket.shipped).

This folder installs as the package `burstmarket.sql` (pyproject.toml maps it); this file makes
it a regular package, which an editable install finds where a namespace package is not found.
"""
