"""The two memory layers and the rule that routes a memory to its row's ``instance_id``.

``profile`` is who the user is, shared by every persona (``instance_id IS NULL``);
``relationship`` is what belongs to the user *with one persona* (``instance_id`` set). The
model names the layer per memory; anything missing or unknown is ``profile``, and a session
without a persona has nowhere to put a relationship memory, so it goes to the profile layer.
"""

from __future__ import annotations

import uuid
from typing import Final, Literal, get_args

Layer = Literal["profile", "relationship"]
LAYERS: Final[tuple[Layer, ...]] = get_args(Layer)
DEFAULT_LAYER: Final[Layer] = "profile"

_SYNONYMS: Final[dict[str, Layer]] = {
    "profile": "profile", "user": "profile", "user_profile": "profile",
    "relationship": "relationship", "relationships": "relationship",
    "relationship_memory": "relationship", "persona": "relationship", "bond": "relationship",
    "关系": "relationship", "关系层": "relationship", "画像": "profile", "用户画像": "profile",
}


def normalise_layer(value: object) -> Layer:
    """The model's layer word, or ``profile`` for anything missing, unknown or not a string."""
    if not isinstance(value, str):
        return DEFAULT_LAYER
    key = value.strip().lower().replace(" ", "_").replace("-", "_")
    return _SYNONYMS.get(key, DEFAULT_LAYER)


def route_instance(layer: str, instance_id: uuid.UUID | None) -> uuid.UUID | None:
    """The ``instance_id`` a memory of ``layer`` is written with for a session of
    ``instance_id``: relationship memories belong to the session's persona, everything else
    (and everything from a session without a persona) to the shared profile layer."""
    if layer == "relationship" and instance_id is not None:
        return instance_id
    return None
