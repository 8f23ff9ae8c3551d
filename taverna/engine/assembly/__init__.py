"""Prompt assembly: from every input of one turn to the prompt a model is sent."""
