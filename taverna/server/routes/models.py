"""The model manager: recommended models for this machine, downloads from Hugging Face with
their progress, pulls into Ollama. A finished download is a `local` connection."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel, Field

from taverna.server.context import AppContext, context, current_user
from taverna.server.schemas import NAME_MAX, Strict
from taverna.services.connections.hub_download import HubFile
from taverna.services.connections.model_jobs import model_jobs
from taverna.services.connections.model_manager import ModelManager

router = APIRouter(prefix="/api/models", tags=["models"])


class DownloadIn(Strict):
    repo: str = Field(min_length=3, max_length=200, description="owner/name on the hub")
    file: str = Field(min_length=6, max_length=500, description="a .gguf file of it")
    revision: str = Field(default="main", min_length=1, max_length=200)
    connection: str = Field(default="", max_length=NAME_MAX, description="the new connection")
    default: bool = False


class PullIn(Strict):
    connection: str = Field(min_length=1, max_length=NAME_MAX, description="an Ollama connection")
    model: str = Field(min_length=1, max_length=300)


class JobOut(BaseModel):
    id: str
    kind: str
    label: str
    state: str = Field(description="running, done or failed")
    done: int
    total: int | None
    status: str
    error: str
    code: str
    params: dict[str, str]
    model: str = ""
    connection: str = ""
    size: int | None = None
    checksum: str = ""


def manager(request: Request, ctx: AppContext = Depends(context)) -> ModelManager:
    return ModelManager(ctx.connections_of(current_user(request)), model_jobs())


@router.get("")
def overview(models: ModelManager = Depends(manager)) -> dict[str, Any]:
    """This machine (memory, cores, GPU), where llama.cpp runs models, the recommended
    models with their licences and whether each fits, and the models already here."""
    models.allowed()
    return models.overview()


class RepoFileOut(BaseModel):
    file: str
    size: int | None = None


@router.get("/files", response_model=list[RepoFileOut])
def repo_files(
    repo: str = Query(min_length=3, max_length=200, description="owner/name on the hub"),
    revision: str = Query(default="main", min_length=1, max_length=200),
    models: ModelManager = Depends(manager),
) -> list[RepoFileOut]:
    """The GGUF files of a repository on the hub, with their sizes."""
    return [RepoFileOut(**found) for found in models.files(repo, revision)]


@router.post("/downloads", response_model=JobOut, status_code=202)
def start_download(body: DownloadIn, models: ModelManager = Depends(manager)) -> JobOut:
    """Download a GGUF file from the hub (resuming a partial one); ask its progress at
    `/api/models/jobs/{id}`."""
    target = HubFile(body.repo, body.file, body.revision)
    job = models.start_download(target, connection=body.connection, default=body.default)
    return JobOut(**job.public())


@router.post("/pulls", response_model=JobOut, status_code=202)
def start_pull(body: PullIn, models: ModelManager = Depends(manager)) -> JobOut:
    """Pull a model into the Ollama of an Ollama connection; its progress as a download's."""
    return JobOut(**models.start_pull(body.connection, body.model).public())


@router.get("/jobs", response_model=list[JobOut])
def list_jobs(request: Request) -> list[JobOut]:
    """This account's downloads and pulls, the running and the recently ended."""
    return [JobOut(**j.public()) for j in model_jobs().list(current_user(request))]


@router.get("/jobs/{job_id}", response_model=JobOut)
def job(job_id: str, request: Request) -> JobOut:
    """How far a download or pull is, and how it ended."""
    return JobOut(**model_jobs().get(job_id, current_user(request)).public())
