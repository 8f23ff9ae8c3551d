"""Pure readers and writers of SillyTavern's files (bytes in, models out, and back)."""
