"""The extraction prompt: a versioned composition of files in the package, overridable by
configuration.

A version is a base prompt plus optional sections appended in order, so a section written
once (the memory layers) composes onto any base (v1 today, the guarded v2 later).
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Final

DEFAULT_PROMPT = "extract_v1.txt"
#: the memory layers (profile / relationship) with English and Chinese examples (issue 18).
LAYERS_SECTION: Final = "layers_section.txt"
#: version → files of ``eros/prompts`` joined by a blank line; DREAMING_PROMPT_VERSION picks one.
PROMPT_VERSIONS: Final[dict[str, tuple[str, ...]]] = {
    "v1": (DEFAULT_PROMPT,),
    "v3": (DEFAULT_PROMPT, LAYERS_SECTION),
}
DEFAULT_VERSION: Final = "v3"


@dataclass(frozen=True)
class Prompt:
    version: str
    system: str


def _bundled(name: str) -> str:
    return resources.files("eros.prompts").joinpath(name).read_text(encoding="utf-8").strip()


def load_prompt(override: Path | None = None, version: str = DEFAULT_VERSION) -> Prompt:
    """The bundled prompt ``version``, or the file ``DREAMING_PROMPT_FILE`` names (its stem is
    the version)."""
    if override is not None:
        return Prompt(f"file:{override.stem}", override.read_text(encoding="utf-8").strip())
    try:
        parts = PROMPT_VERSIONS[version]
    except KeyError:
        raise ValueError(f"unknown prompt version {version!r}; known: "
                         f"{', '.join(PROMPT_VERSIONS)}") from None
    return Prompt(f"extract_{version}", "\n\n".join(_bundled(part) for part in parts))


def user_message(transcript_text: str) -> str:
    """The user turn of the extraction call: the transcript between clear markers."""
    return f"Transcript:\n<<<\n{transcript_text}\n>>>\nReply with the JSON object only."
