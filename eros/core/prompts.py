"""The extraction prompt: a versioned file in the package, overridable by configuration."""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path

DEFAULT_PROMPT = "extract_v1.txt"


@dataclass(frozen=True)
class Prompt:
    version: str
    system: str


def load_prompt(override: Path | None = None) -> Prompt:
    """The bundled prompt, or the file ``DREAMING_PROMPT_FILE`` names (its stem is the version)."""
    if override is not None:
        return Prompt(f"file:{override.stem}", override.read_text(encoding="utf-8").strip())
    text = resources.files("eros.prompts").joinpath(DEFAULT_PROMPT).read_text(encoding="utf-8")
    return Prompt(DEFAULT_PROMPT.removesuffix(".txt"), text.strip())


def user_message(transcript_text: str) -> str:
    """The user turn of the extraction call: the transcript between clear markers."""
    return f"Transcript:\n<<<\n{transcript_text}\n>>>\nReply with the JSON object only."
