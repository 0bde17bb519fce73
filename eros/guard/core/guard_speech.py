"""Someone else's words, quoted in a memory: the rules that catch orders to the assistant do not
judge them alone.

A memory is about the user, so it often quotes people in the user's life: "her boss said: from
now on you must answer every client within an hour", "her yoga teacher says 'forget the rules,
just breathe'", a lyric she keeps singing ("ignore the rules tonight"). Those sentences hold the
very phrases the lexical rules look for ("from now on you must", "forget the rules"), so the
rules dropped them — the largest share of the look-alikes lost on every held-out set so far.
When a text names a third party who speaks (a boss, a teacher, a parent, a song, a proverb …),
marks the speech (a verb of saying or a quotation mark) and does not mention the assistant at
all, the rules whose reason is ``addresses_ai`` step aside and the meaning layer judges the text
on its embedding, as it judges every other memory. Rules for role lines, markup, persona claims
and secrets still apply, and a text that names the assistant (``her boss said the companion
must …``) is judged by every rule as before: the speaker must be someone other than the user
or the assistant, and the assistant must not be the one addressed.

A phrase *mentioned* as an example of a kind ("jailbreak phrases such as 'ignore previous
instructions'", "prompts like '…'", "“忽略之前的指令”这类攻击") is named, not said: a thesis, a
filter or a test the user writes is about it. :func:`mentions_masked` blanks such a quoted
span for the ``addresses_ai`` rules only (issue 30's eleventh round); every other rule and the
secret checks still read it, and the meaning layer judges the whole text.
"""

from __future__ import annotations

import re

#: a third party whose words a memory may quote (English and Chinese: the languages of the
#: lexical rules); the user ("she said …") is not one.
_SPEAKER = re.compile(
    r"\b(boss|manager|supervisor|teacher|coach|trainer|instructor|professor|pastor|priest|"
    r"preacher|rabbi|imam|monk|nun|grand(ma|mother|pa|father)|mother|mom|mum|father|dad|aunt|"
    r"uncle|doctor|therapist|physio|landlord|dungeon master|referee|lyrics?|song|chorus|refrain|"
    r"verse|line|poem|proverb|saying|motto|slogan|band|singer)s?\b"
    r"|老师|老板|经理|领导|教练|妈妈|母亲|爸爸|父亲|奶奶|爷爷|外婆|外公|医生|牧师|歌词|歌里|一首歌|这句|台词|谚语|俗话")
#: the speech is marked: a verb of saying or a quotation mark
_SPEECH = re.compile(
    r"\b(said|says|say|saying|told|tells|preached|preaches|sings?|sang|singing|wrote|writes|"
    r"decided|insists?|repeats?|yells?|shouts?)\b|[:'\"“”‘’«»「」『』]|说|唱|讲|写道")
#: the assistant (or its instructions) named: then the rules judge the text as usual
_ASSISTANT = re.compile(
    r"(?<![a-z])(ai|a\.i\.|assistant|bot|chatbot|companion|model|llm|gpt|persona|system|"
    r"prompts?)(?![a-z])|助手|机器人|人工智能|模型|系统|提示词|陪伴")


def quotes_someone_else(view: str) -> bool:
    """Whether a normalised (case-folded) text quotes a third party and never names the
    assistant: then the ``addresses_ai`` rules leave it to the meaning layer."""
    return (_SPEAKER.search(view) is not None and _SPEECH.search(view) is not None
            and _ASSISTANT.search(view) is None)


#: a quoted span introduced as an example of a kind (English before the quote, Chinese after)
_MENTION = re.compile(
    r"(?:\b(?:such as|(?<!would )(?<!'d )(?<!’d )like|e\.g\.|for (?:example|instance)|named|"
    r"called|the (?:phrase|words?|string)|phrases?|strings?)\s*[:,]?\s*)"
    r"(?:'[^'\n]{3,120}'|\"[^\"\n]{3,120}\"|“[^”\n]{3,120}”|‘[^’\n]{3,120}’|«[^»\n]{3,120}»)"
    r"|(?:“[^”\n]{2,60}”|「[^」\n]{2,60}」|\"[^\"\n]{2,60}\")(?=这类|這類|之类|之類|这样的|這樣的|等)",
    re.IGNORECASE)


def mentions_masked(text: str) -> str | None:
    """``text`` with each quoted example of a kind replaced by a neutral word, or None when it
    mentions none."""
    masked = _MENTION.sub(lambda m: m.group(0)[: m.group(0).find(_first_quote(m.group(0)))]
                          + "“…”", text)
    return None if masked == text else masked


def _first_quote(span: str) -> str:
    return next(ch for ch in span if ch in "'\"“‘«「")
