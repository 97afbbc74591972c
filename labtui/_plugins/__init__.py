"""Namespace under which built-in backend plugins are imported."""
