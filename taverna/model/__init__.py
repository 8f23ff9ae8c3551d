"""Plain typed data shared by every layer: characters, lorebooks, presets, chats, prompts."""
