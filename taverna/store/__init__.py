"""Persistence: the repository interface and its SQL implementation."""
