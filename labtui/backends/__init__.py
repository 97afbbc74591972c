"""Backends: the contract every backend plugin implements, its registry, and the public plugin kit."""
