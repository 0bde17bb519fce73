"""The offline extractor: a HEURISTIC, not a model (the hashing embedder is its sibling
:mod:`eros.providers.offline.hashing`), stdlib only.

It lets the whole pipeline run with no API keys (demos, CI, load tests): ``heuristic_extract``
is a hand-written table of English and Chinese cue phrases. It is deterministic, so a run is
reproducible and a test can assert on exact output. Quality is "plausible", not "good": use
live providers for that.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Final

from eros.core.transcript import read_turns
from eros.providers.offline.hashing import HAS_CJK as _HAS_CJK
from eros.providers.offline.layers import (
    companion_wording,
    mentions_companion,
    relationship_category,
)
from eros.providers.offline.sensitivity import sensitivity_label

__all__ = ["CONFIDENCE", "HEURISTIC_MODEL", "IMPORTANCE", "MAX_MEMORIES", "OfflineCompletion",
           "OfflineExtractor", "heuristic_extract", "numbered_user_turns",
           "offline_consolidation_reply", "user_turns"]

#: the heuristic extractor's name, and the model its replies are recorded under
HEURISTIC_MODEL: Final = "offline-heuristic"

#: importance by category: people and identity outlive moods and tastes.
IMPORTANCE: Final = {"relation": 0.8, "fact": 0.7, "event": 0.5, "emotion": 0.5, "preference": 0.4}
#: how far a cue phrase is trusted; a heuristic should never claim near-certainty.
CONFIDENCE: Final = {"relation": 0.65, "fact": 0.7, "event": 0.6, "emotion": 0.55,
                     "preference": 0.65}
#: tie-breaking order when one clause matches several categories (relation beats all).
_PRIORITY: Final[tuple[str, ...]] = ("relation", "fact", "emotion", "event", "preference")
MAX_MEMORIES: Final = 10
_MAX_CONTENT: Final = 160

# --- transcript parsing ---------------------------------------------------------------------
def user_turns(transcript: str) -> list[str]:
    """The user's turns only, continuation lines joined with newlines.

    Any line that is neither a ``role:`` line nor a two-space continuation ends the current
    turn, so instructions or persona text around a transcript are never credited to the user.
    """
    return [text for _, text in numbered_user_turns(transcript)]


def numbered_user_turns(transcript: str) -> list[tuple[int | None, str]]:
    """:func:`user_turns` with each turn's number (``[n]``; None in a plain transcript)."""
    return [(t.number, t.text) for t in read_turns(transcript) if t.role == "user" and t.text]


# --- cue tables -----------------------------------------------------------------------------
_EMOTION_WORDS = (
    r"tired|exhausted|stressed(?: out)?|sad|happy|lonely|anxious|nervous|depressed|excited|"
    r"overwhelmed|angry|upset|frustrated|scared|worried|miserable|burnt out|burned out|"
    r"heartbroken|homesick|relieved|proud|bored|a mess|a wreck|drained|hurt"
)
_DEGREE = r"(?:(?:so|really|very|super|pretty|kind of|kinda|a bit|a little|totally|just|still)\s+)*"
_PEOPLE = (
    r"mom|mother|mum|mama|dad|father|papa|parents|boss|manager|boyfriend|girlfriend|ex|bf|gf|"
    r"best friend|friends?|sister|brother|wife|husband|partner|grandma|grandmother|grandpa|"
    r"grandfather|aunt|uncle|cousin|son|daughter|roommate|coworkers?|colleagues?|family"
)
_EN: Final[dict[str, re.Pattern[str]]] = {
    "relation": re.compile(
        rf"\bmy (?:(?:new|old|older|younger|little|big|baby|step|twin|late|ex|former) )?"
        rf"(?:{_PEOPLE})\b"),
    "fact": re.compile(
        r"\bi (?:live|lived|grew up) in\b|\bi am (?:originally )?from\b|\bi work (?:as|at|for|in)\b"
        r"|\bmy name is\b|\bi (?:just |finally )?moved (?:to|here|back)\b|\bi am moving to\b"
        r"|^i (?:study|teach|majored in)\b|\bi am studying\b|\bi am \d+ years old\b|\bmy job\b"
        r"|\bi am (?:an? )?(?:teacher|nurse|engineer|developer|student|doctor|designer|"
        r"programmer|vegetarian|vegan|allergic)\b|\bi have (?:a|two|three) (?:dog|cat)s?\b"),
    "emotion": re.compile(
        rf"\bi (?:feel|felt|am feeling|have been feeling)\b"
        rf"|\bi (?:am|was|have been) {_DEGREE}(?:{_EMOTION_WORDS})\b"
        r"|\b(?:can't|couldn't|cannot) sleep\b"),
    "event": re.compile(
        r"\b(?:yesterday|last (?:night|week|weekend|month|year|friday|saturday|sunday)"
        r"|this (?:morning|weekend)|earlier today|today i)\b"
        r"|\bi (?:just|finally) (?!feel|want|wanna|need|think|don't|can't|like|love|hate)\w+"
        r"|\b(?:we|i) broke up\b|\bi (?:passed|failed|quit|graduated|went to|flew to|visited"
        r"|got (?:promoted|fired|laid off|accepted|rejected|engaged|married))\b"
        r"|\b(?:next week|tomorrow) i\b|\bmy (?:exam|interview|trip|flight|birthday)\b"),
    "preference": re.compile(
        r"^i (?:(?:really|absolutely|totally|kinda|also|still|do not|don't) )*"
        r"(?:like|love|hate|prefer|enjoy|adore|dislike|can't stand)\b"
        r"|\bi am (?:really |so )?(?:into|a (?:big |huge )?fan of)\b|\bmy favou?rite\b"),
}
_ZH_PEOPLE = (
    "妈妈|妈|爸爸|爸|母亲|父亲|爸妈|父母|老公|老婆|姐姐|姐|妹妹|妹|哥哥|哥|弟弟|弟|奶奶|爷爷|"
    "外婆|姥姥|家人|老板|领导|上司|同事|室友|闺蜜|男朋友|女朋友|前男友|前女友|朋友|对象"
)
_ZH: Final[dict[str, re.Pattern[str]]] = {
    "relation": re.compile(
        f"我的?(?:{_ZH_PEOPLE})|老板|领导|上司|男朋友|女朋友|前男友|前女友|闺蜜|室友|爸妈|父母|妈妈|爸爸|同事|朋友"),
    "fact": re.compile(
        r"我(?:现在|一直)?住在|我(?:现在)?住|我是(?!说|不是|真的|在|不)|我叫|我的名字|我来自|我老家"
        r"|我(?:现在|目前|如今)?在.{0,12}?(?:工作|上班|上学|读书|读研|实习|公司|学校|医院|银行|事务所)"
        r"|我(?:刚|已经)?搬(?:到|去|家)|搬到|我今年\d+岁"
        r"|我(?:是)?(?:程序员|老师|医生|护士|学生|设计师|工程师)"),
    "emotion": re.compile(
        "好累|很累|累死|太累|难过|伤心|开心|高兴|压力|焦虑|烦|郁闷|孤独|寂寞|崩溃|紧张|害怕|担心"
        "|难受|委屈|生气|想哭|失眠|心情"),
    "event": re.compile(
        "分手|考试|面试|出差|旅行|旅游|生日|毕业|辞职|加班|搬家"
        "|我.{0,4}?(?:昨天|前天|上周|上个?星期|上个月|今天|今早|今晚|刚刚|刚才|刚|周末)"
        "|(?:昨天|前天|上周|上个?星期|上个月|今天|今早|今晚|刚刚|刚才|周末).{0,6}?我"),
    "preference": re.compile(
        "我(?:也|最|超|特别|很|真的|不|比较|还是)?(?:喜欢|讨厌|爱吃|爱听|爱看|爱(?!你)|受不了)|最喜欢|最爱"),
}
_FIRST_PERSON_EN = re.compile(r"\b(?:i|my|me|we|our)\b")
_SALIENT = re.compile(
    r"broke up|分手|passed|failed|moved|搬|marr|结婚|promot|fired|laid off|辞职|quit|engaged"
    r"|pregnant|diagnos|funeral|去世|passed away|graduat|毕业|考研|exam", re.IGNORECASE)
_SKIP = re.compile(r"^\W*(?:i love you|i miss you|我爱你|想你了?|我想你)\W*$", re.IGNORECASE)

# --- clause splitting and normalisation -----------------------------------------------------
_SENTENCE = re.compile(r"[^.!?。！？;；\n…]+[.!?。！？;；…]*")
_ABBREV = re.compile(r"\b(Mr|Ms|Mrs|Dr|Prof|St|vs|etc)\.", re.IGNORECASE)
# New clause where a new first-person subject starts; "Devin and I are" is one subject.
_CLAUSE_SPLIT = re.compile(
    r",\s*(?=(?:and |but |so )?(?:i|my|i'm|i've)\b)"
    r"|\s+(?:but|and|so|because|since)\s+(?=(?:i(?! are| were| both)|my|i'm|i've)\b)"
    r"|[，,]\s*(?=我)|(?:但是|可是|不过|而且|因为|所以)", re.IGNORECASE)
_QUESTION_START = re.compile(
    r"^(?:do|does|did|are|is|can|could|would|will|what|why|how|where|when|who|which|have you)\b",
    re.IGNORECASE)
_CONTRACTIONS = ((r"\bi'm\b", "I am"), (r"\bi've\b", "I have"), (r"\bi'd\b", "I would"),
                 (r"\bi'll\b", "I will"), (r"\bim\b", "I am"))
_FILLER_EN = re.compile(
    r"^(?:(?:well|so|um+|uh+|oh|honestly|actually|anyway|lol|haha+|ok(?:ay)?|yeah|yes|no|and"
    r"|but|also|btw|hey|hi|hmm+|guess what|you know what|deal)\b[\s,!.:-]*)+"
    r"|^[\w /'-]{1,20}:\s+(?=\w)", re.IGNORECASE)  # a short "label: " lead-in, e.g. "Update: "
_DANGLING = re.compile(r"^I (?:\w+ ){0,2}(?:it|that|this|them)$", re.IGNORECASE)
_TIME_LEAD = re.compile(
    r"^(yesterday|today|tonight|earlier today|last (?:night|week|weekend|month|year|friday"
    r"|saturday|sunday)|this (?:morning|afternoon|evening|week|weekend))[\s,]+(?=i\b|my\b)(.*)$",
    re.IGNORECASE | re.DOTALL)
_SUBJECT = re.compile(
    r"^i\s+((?:(?:just|really|also|still|always|never|actually|finally|usually|kinda|totally"
    r"|absolutely|recently|kind of)\s+)*)([\w']+)(.*)$", re.IGNORECASE | re.DOTALL)
_FEEL = re.compile(rf"^I am\s+({_DEGREE}(?:{_EMOTION_WORDS})\b.*)$", re.IGNORECASE | re.DOTALL)
_UNCHANGED_WORDS = (  # modals and irregular pasts: no third-person "s"
    "can could will would should might must may was had did can't won't didn't couldn't "
    "wouldn't shouldn't wasn't went got broke felt took made saw met came left lost found quit "
    "told said thought bought ate drank ran won wrote began became fell gave kept knew slept "
    "spent sat sent heard grew flew cut put let hurt")
_UNCHANGED = frozenset(_UNCHANGED_WORDS.split())
_IRREGULAR = {"am": "is", "have": "has", "do": "does", "go": "goes", "don't": "doesn't",
              "haven't": "hasn't", "are": "is", "were": "was"}
_PRONOUNS = ((r"\bI am\b", "they are"), (r"\bI was\b", "they were"), (r"\bmyself\b", "themselves"),
             (r"\bI\b", "they"), (r"\bme\b", "them"), (r"\bmy\b", "their"), (r"\bmine\b", "theirs"))
_ZH_FILLER = re.compile(
    r"^(?:(?:嗯+|哎+|唉+|啊+|哈+|呜+|其实|就是|然后|反正|对了|所以|不过|话说|说实话|说真的|老实说)"
    r"[，,\s~～]*)+")


def _third_person_verb(verb: str) -> str:
    """``live`` → ``lives``: just enough English morphology for a dropped "I"."""
    low = verb.lower()
    if low in _IRREGULAR:
        return _IRREGULAR[low]
    if low in _UNCHANGED or low.endswith(("ed", "'t")):
        return low
    if low.endswith(("s", "sh", "ch", "x", "z", "o")):
        return low + "es"
    if len(low) > 1 and low.endswith("y") and low[-2] not in "aeiou":
        return low[:-1] + "ies"
    return low + "s"


def _prepare(clause: str) -> str:
    """Fold apostrophes, drop lead-ins ("honestly,", 哎), expand "I'm" → "I am" for the cues."""
    text = _ZH_FILLER.sub("", clause.replace("’", "'").strip())
    if not _HAS_CJK.match(text):
        text = _FILLER_EN.sub("", text).strip(" ,.!;:-")
    for pattern, repl in _CONTRACTIONS:
        text = re.sub(pattern, repl, text, flags=re.IGNORECASE)
    return text


def _normalise_en(text: str, category: str) -> str:
    """"I live in Shanghai" → "Lives in Shanghai": drop the subject, keep the user's words."""
    lead = _TIME_LEAD.match(text)
    if lead:
        text = f"{lead.group(2).rstrip(' ,.!')} {lead.group(1).lower()}"
    feel = _FEEL.match(text)
    subject = _SUBJECT.match(text)
    if category == "emotion" and feel:
        text = "feels " + feel.group(1)
    elif subject:
        text = subject.group(1) + _third_person_verb(subject.group(2)) + subject.group(3)
    elif text[:3].lower() == "my ":
        text = ("User's " if category == "relation" else "") + text[3:]
    for pattern, repl in _PRONOUNS:
        text = re.sub(pattern, repl, text)
    return text[:1].upper() + text[1:]


def _normalise_zh(clause: str) -> str:
    """Keep the Chinese clause, minus end particles and a leading 我 (kept in 我妈, 我们)."""
    text = re.sub("[啊呀啦哦嘛呢哈]+$", "", clause.strip(" 。！!，,.~～…"))
    if text.startswith(("我的", "我叫")):
        return ("名叫" if text[1] == "叫" else "") + text[2:]
    if text.startswith("我") and not re.match(f"我(?:们|{_ZH_PEOPLE})", text):
        return text[1:]
    return text


def _classify(clause: str) -> str | None:
    """The winning category of a prepared clause, or None if no first-person cue fires."""
    low = clause.lower()
    if low.startswith(("你", "you ", "you're", "your ")):
        return None  # about the companion, not the user
    has_cjk = bool(_HAS_CJK.search(clause))
    english_ok = bool(_FIRST_PERSON_EN.search(low))
    for category in _PRIORITY:
        if (english_ok and _EN[category].search(low)) or (has_cjk and _ZH[category].search(low)):
            return category
    return None


def _clauses(turn: str) -> list[str]:
    """Statement clauses of one turn: questions dropped, tiny fragments glued to a neighbour."""
    out: list[str] = []
    for sentence in _SENTENCE.findall(_ABBREV.sub(r"\1", turn)):
        stripped = sentence.strip()
        body = stripped.rstrip(".!。！;；… ")
        if not body or stripped.endswith(("?", "？")) or body.endswith(("吗", "么")):
            continue
        if _QUESTION_START.match(body) and not _HAS_CJK.search(body):
            continue
        merged: list[str] = []
        carry = ""
        for raw in _CLAUSE_SPLIT.split(body):
            part = _prepare(raw or "")
            if not part:
                continue
            if merged and _DANGLING.match(part):  # "... and I hate it": glue "it" to its noun
                merged[-1] += " and " + part
                continue
            part = f"{carry}, {part}" if carry else part
            carry = "" if _long_enough(part) else part
            if not carry:
                merged.append(part)
        if carry:
            sep = "，" if _HAS_CJK.search(carry) else ", "
            merged = [*merged[:-1], merged[-1] + sep + carry] if merged else [carry]
        out.extend(merged)
    return out


def _trim_en(clause: str, category: str) -> str:
    """The shortest comma-prefix that still says the same thing: "I live in Shanghai, there is
    a dumpling place under my building" → "I live in Shanghai" (so repeats consolidate)."""
    parts = clause.split(", ")
    for k in range(1, len(parts)):
        prefix = ", ".join(parts[:k])
        if _long_enough(prefix) and _classify(prefix) == category:
            return prefix
    return clause


def _long_enough(text: str) -> bool:
    """Three words, or three CJK characters: shorter is filler ("ok lol", "嗯嗯")."""
    return len(_HAS_CJK.findall(text)) >= 3 or len(text.split()) >= 3


def heuristic_extract(transcript: str) -> list[dict[str, Any]]:
    """Categorised memory candidates from the user's turns only, at most ten, deduplicated.

    HEURISTIC, not a model: a clause becomes a memory when a first-person cue phrase matches
    (English or Chinese). Relation beats the rest when a person is named. A clause about the
    user with the companion is a relationship-layer memory (offline/layers.py). In a numbered
    transcript each memory cites the turns it was read in (``"sources"``: the first, and every
    later turn that says the same thing). Never raises.
    """
    found: list[tuple[float, dict[str, Any]]] = []
    seen: dict[str, dict[str, Any]] = {}
    for number, turn in numbered_user_turns(transcript):
        for clause in _clauses(turn):
            if not _long_enough(clause) or _SKIP.match(clause):
                continue
            category, layer = _classify(clause), "profile"
            if category is None:
                category, layer = relationship_category(clause), "relationship"
                if category is None:
                    continue
            elif mentions_companion(clause):
                layer = "relationship"
            if _HAS_CJK.search(clause) and not re.match(r"^(?:i|my)\b", clause, re.I):
                content = _normalise_zh(clause)
            else:
                content = _trim_en(clause, category)
                if layer == "relationship":
                    content = companion_wording(content)
                content = _normalise_en(content, category)
            content = re.sub(r"\s+", " ", content).strip()
            if len(content) > _MAX_CONTENT:
                content = content[:_MAX_CONTENT].rsplit(" ", 1)[0].rstrip(" ,") + "…"
            key = re.sub(r"[\W_]+", "", content.casefold())
            if len(key) < 2:
                continue
            if key in seen:
                sources = seen[key].get("sources")
                if sources is not None and number is not None and number not in sources:
                    sources.append(number)
                continue
            boost = 0.1 if _SALIENT.search(clause) else 0.0
            importance = round(min(1.0, IMPORTANCE[category] + boost), 2)
            memory: dict[str, Any] = {
                "content": content, "category": category, "importance": importance,
                "layer": layer, "evidence_type": "explicit", "confidence": CONFIDENCE[category],
            }
            if number is not None:
                memory["sources"] = [number]
            if label := sensitivity_label(clause):
                memory["sensitivity"] = label
            seen[key] = memory
            found.append((importance, memory))
    # Over the cap, the most important win; ties and the output keep transcript order.
    ranked = sorted(range(len(found)), key=lambda i: (-found[i][0], i))
    return [found[i][1] for i in sorted(ranked[:MAX_MEMORIES])]


@dataclass(frozen=True)
class OfflineCompletion:
    """What ``OfflineExtractor.complete`` returns; the core adapts it to its own Completion."""

    text: str
    finish_reason: str
    model: str
    prompt_tokens: int
    completion_tokens: int


class OfflineExtractor:
    """Structural match for the core's LLM provider protocol, answering with heuristic JSON."""

    name = HEURISTIC_MODEL

    def complete(self, system: str, user: str, max_tokens: int) -> OfflineCompletion:
        """Reply ``{"memories": [...]}`` for the transcript in ``user``; ``system`` is ignored.

        Memories are dropped from the end until the reply fits ``max_tokens``, so the JSON is
        always whole rather than cut off mid-string.
        """
        memories = heuristic_extract(user)
        text = json.dumps({"memories": memories}, ensure_ascii=False)
        while memories and len(text) // 4 > max_tokens:
            memories = memories[:-1]
            text = json.dumps({"memories": memories}, ensure_ascii=False)
        return OfflineCompletion(
            text=text, finish_reason="stop", model=self.name,
            prompt_tokens=(len(system) + len(user)) // 4, completion_tokens=len(text) // 4)


# --- consolidation (real dreaming), offline ---------------------------------------------------
_CLUSTER_LINE = re.compile(r"^Cluster (\d+) \(category (\w+)\):\s*$")
_MEMBER_LINE = re.compile(r"^\[(\d+)\] [^|]*\| (\w+) \| importance ([-\d.]+) \| (.*)$")


def offline_consolidation_reply(request: str) -> str:
    """A deterministic, NON-MODEL answer to a consolidation request: every cluster is treated
    as duplicates of its newest member (members are listed oldest first), which becomes the
    canonical memory. Nothing is ever superseded or kept separate — enough to try the pass
    end to end without an API key, not a judgement anyone should rely on."""
    clusters: list[dict[str, Any]] = []
    for line in request.splitlines():
        header = _CLUSTER_LINE.match(line)
        if header:
            clusters.append({"cluster": int(header.group(1)), "duplicates": [],
                             "superseded": [], "separate": []})
            continue
        member = _MEMBER_LINE.match(line)
        if member and clusters:
            number, category, importance, content = member.groups()
            clusters[-1]["duplicates"].append(int(number))
            try:
                value: float | None = float(importance)
            except ValueError:
                value = None
            clusters[-1]["canonical"] = {"content": content, "category": category,
                                         "importance": value}
    return json.dumps({"clusters": clusters}, ensure_ascii=False)
