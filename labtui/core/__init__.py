"""The foundation every layer may import: typed events, paths, statistics and the error root."""
