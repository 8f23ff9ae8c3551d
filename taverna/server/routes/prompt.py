"""The prompt inspector: the prompt as it will be (or was) sent, its ledger and lorebook trace."""

from __future__ import annotations

from fastapi import APIRouter, Depends
from pydantic import BaseModel, Field

from taverna.server import usecases
from taverna.server.context import AppContext, context
from taverna.server.routes.generation import generation
from taverna.server.schemas import NAME_MAX, TEXT_MAX, PromptOut, Strict
from taverna.services.turns import GenerationService

router = APIRouter(prefix="/api/chats", tags=["prompt"])


class TokenCountIn(Strict):
    text: str = Field(default="", max_length=TEXT_MAX)
    connection: str | None = Field(
        default=None, max_length=NAME_MAX, description="count as for this connection's model"
    )


class TokenCountOut(BaseModel):
    tokens: int = Field(description="the tokens of `text`")
    prompt_tokens: int = Field(description="the tokens of the next prompt, as it stands")
    tokenizer: str


@router.get("/{chat_id}/prompt", response_model=PromptOut)
def next_prompt(chat_id: str, ctx: AppContext = Depends(context)) -> PromptOut:
    """The prompt the next reply would be generated from (nothing is sent)."""
    return usecases.inspect_prompt(ctx, chat_id, None)


@router.get("/{chat_id}/messages/{node_id}/prompt", response_model=PromptOut)
def prompt_of_message(chat_id: str, node_id: str, ctx: AppContext = Depends(context)) -> PromptOut:
    """The prompt of the reply `node_id`: built again from the path that led to it."""
    return usecases.inspect_prompt(ctx, chat_id, node_id)


@router.post("/{chat_id}/tokens", response_model=TokenCountOut)
def count_tokens(
    chat_id: str, body: TokenCountIn, service: GenerationService = Depends(generation)
) -> TokenCountOut:
    """The tokens of the text being typed, with the tokenizer the chat's next prompt is
    counted with, and that prompt's total (nothing is sent or written)."""
    found = service.count_tokens(chat_id, body.text, connection=body.connection)
    return TokenCountOut(tokens=found.text, prompt_tokens=found.prompt, tokenizer=found.tokenizer)
