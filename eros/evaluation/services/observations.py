"""``eros eval --extractor observations``: a suite's written observations replayed as the
model's reply (docs/eval.md, "Observation replay").

LoCoMo ships, per session and speaker, the facts a GPT model wrote with the turns
(``dia_id``) each came from. :class:`ObservationReplay` answers each extraction call with
the observations of the session whose transcript it is given, in the reply format of the
extraction prompt, citing their turns by the numbers the transcript gives them — so parsing,
the guard, embedding, the write (with its provenance), consolidation and recall all run for
real on realistic memories at full scale, with no LLM. A transcript whose turns are not
numbered (a prompt before ``extract_v3``) gets no ``sources``: the write path then falls back
to the extraction window, as it would for a model that cited nothing.

Which session a transcript is: its last turns, read back from the transcript (role and text),
identify it; the turns are then aligned from the end (a long transcript is trimmed from the
front), which maps each turn id to its number.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from eros.core.text import clean_text
from eros.evaluation.core.suite import Session, Suite
from eros.providers.base import Completion
from eros.providers.offline.heuristic import IMPORTANCE

#: a turn's first line in a transcript: ``user: …``, optionally numbered (``[3] user: …``,
#: ``3. user: …``, ``3: user: …``)
_TURN_LINE = re.compile(r"^(?:\[?(\d+)\]?[.:)]?\s*)?(user|assistant):\s?(.*)$")
_KEY_TURNS = 3
_CUES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("relation", re.compile(r"\b(friend|mother|mom|father|dad|husband|wife|partner|"
                            r"boyfriend|girlfriend|kids?|children|son|daughter|sister|"
                            r"brother|family|parents?|grand\w+|married|dating)\b", re.I)),
    ("emotion", re.compile(r"\b(feels?|felt|happy|sad|anxious|stress\w*|excited|proud|"
                           r"overwhelm\w*|lonely|grateful|upset|worried|nervous)\b", re.I)),
    ("preference", re.compile(r"\b(likes?|loves?|enjoys?|favou?rite|prefers?|fan of|"
                              r"passionate|hates?|dislikes?|into)\b", re.I)),
    ("event", re.compile(r"\b(attended|went|visited|recently|last (week|month|year)|"
                         r"yesterday|plans?|planning|will|started|joined|took|bought|moved|"
                         r"trip|traveled|travelled)\b", re.I)),
)


def category_of(text: str) -> str:
    """A category for an observation (they carry none): the first cue family that fires,
    in the offline extractor's priority order, else ``fact``."""
    for category, cue in _CUES:
        if cue.search(text):
            return category
    return "fact"


def _first_line(content: str) -> str:
    return clean_text(content).strip().split("\n", 1)[0].strip()


@dataclass
class ObservationReplay:
    """A :class:`~eros.providers.base.ChatCompleter` answering extraction calls with the
    suite's observations (no model); ``misses`` counts transcripts it could not place."""

    suite: Suite
    name: str = "observations"
    offline: bool = True
    misses: int = 0
    _sessions: dict[tuple[tuple[str, str], ...], Session] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for user in self.suite.users:
            for session in user.sessions:
                key = tuple((t.role, _first_line(t.content)) for t in session.turns)
                self._sessions[key[-_KEY_TURNS:]] = session

    def complete(self, system: str, user: str, *, max_tokens: int) -> Completion:
        lines = [(m.group(1), m.group(2), m.group(3).strip())
                 for line in user.replace("\r\n", "\n").split("\n")
                 if (m := _TURN_LINE.match(line))]
        key = tuple((role, text) for _, role, text in lines[-_KEY_TURNS:])
        session = self._sessions.get(key)
        memories: list[dict[str, object]] = []
        if session is None:
            self.misses += 1
        else:
            numbers = {turn.id: int(number) for turn, (number, _, _) in
                       zip(reversed(session.turns), reversed(lines), strict=False)
                       if turn.id is not None and number is not None}
            for obs in session.observations:
                category = category_of(obs.text)
                item: dict[str, object] = {"content": obs.text, "category": category,
                                           "importance": IMPORTANCE.get(category, 0.5)}
                if numbers:
                    item["sources"] = [numbers[t] for t in obs.turns if t in numbers]
                memories.append(item)
        text = json.dumps({"memories": memories}, ensure_ascii=False)
        return Completion(text, "stop", self.name, (len(system) + len(user)) // 4,
                          len(text) // 4)
