"""The pure engine: macros, lorebook activation, tokens, prompt assembly. No I/O."""
