"""Request builders and streaming transports, one module per model API."""
