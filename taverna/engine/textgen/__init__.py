"""Text Completion: the story string, instruct templates, stop strings, context fitting,
and Hugging Face chat templates."""

from taverna.engine.textgen.builder import build_text_completion

__all__ = ["build_text_completion"]
