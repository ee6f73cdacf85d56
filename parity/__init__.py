"""The parity harness: legacy trainer vs Configurable components, bit for bit."""
