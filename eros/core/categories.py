"""The fixed category vocabulary and the normaliser that keeps it fixed."""

from __future__ import annotations

import re
from typing import Final, Literal, get_args

Category = Literal["fact", "preference", "event", "emotion", "relation"]
CATEGORIES: Final[tuple[Category, ...]] = get_args(Category)
DEFAULT_CATEGORY: Final[Category] = "fact"

#: common synonyms a model invents, mapped onto the five; anything else becomes ``fact``.
_SYNONYMS: Final[dict[str, Category]] = {
    **{c: c for c in CATEGORIES},
    "facts": "fact", "profile": "fact", "personal_info": "fact", "personal": "fact",
    "biography": "fact", "identity": "fact", "attribute": "fact", "background": "fact",
    "work": "fact", "job": "fact", "occupation": "fact", "location": "fact", "health": "fact",
    "preferences": "preference", "like": "preference", "likes": "preference",
    "dislike": "preference", "dislikes": "preference", "interest": "preference",
    "interests": "preference", "hobby": "preference", "hobbies": "preference",
    "taste": "preference", "habit": "preference", "habits": "preference",
    "events": "event", "experience": "event", "experiences": "event", "milestone": "event",
    "plan": "event", "plans": "event", "activity": "event", "episode": "event",
    "emotions": "emotion", "feeling": "emotion", "feelings": "emotion", "mood": "emotion",
    "emotional_state": "emotion", "sentiment": "emotion", "state": "emotion",
    "relations": "relation", "relationship": "relation", "relationships": "relation",
    "family": "relation", "social": "relation", "friend": "relation", "friends": "relation",
    "people": "relation", "person": "relation",
    "事实": "fact", "偏好": "preference", "喜好": "preference", "事件": "event",
    "情绪": "emotion", "情感": "emotion", "关系": "relation", "人际关系": "relation",
}

_SEPARATORS = re.compile(r"[\s\-/]+")


def normalise_category(value: object) -> Category:
    """Map any model-supplied category onto the five, so grouping never explodes."""
    if not isinstance(value, str):
        return DEFAULT_CATEGORY
    key = _SEPARATORS.sub("_", value.strip().lower()).strip("_")
    return _SYNONYMS.get(key, DEFAULT_CATEGORY)
