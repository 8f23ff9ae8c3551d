"""Prompt assembly: from every input of one turn to the prompt a model is sent.

    from taverna.engine.assemble import assemble, message_cost

    cost = message_cost(context)           # keep one per chat: counts and parts are reused
    prompt = assemble(context, cost=cost)  # Chat Completion messages or Text Completion text
    prompt = assemble(context, counts=CountCache())  # or one bounded cache for every chat
    prompt.ledger                          # every part, its source and tokens; what was cut

Modules: `context` (all inputs of a turn as frozen data), `turn` (what both APIs
share: card fields, the chat as sent, examples, lorebook scan, injections),
`injections` (the in-chat injection table and its ordering), `world` and
`lorebook_bridge` (the seam to the lorebook engine), `budget` (per-message token
costs), `chat_completion` (the prompt manager and the budget), `chat_layout` (its
slots and the budget left), `chat_history` and `chat_examples` (the chat and the example
dialogue it fits), `ledger` (the readable ledger), `cache` (where a prompt stops sharing
the previous prefix).
Text Completion is built by `taverna.engine.textgen` from the same `Turn`; `taverna.engine.assemble`,
above both, joins them.
"""
