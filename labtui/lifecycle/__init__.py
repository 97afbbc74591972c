"""What outlives one run: which sessions are alive, reconciling the store with the backends, cleanup."""
