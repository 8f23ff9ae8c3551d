"""Helpers the tests share that are not fixtures (the fixtures are in the conftest.py files)."""
