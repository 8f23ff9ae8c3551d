"""taverna: a role-play frontend for language-model APIs."""

__version__ = "0.1.0"
