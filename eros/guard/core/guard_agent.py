"""The assistant as a memory's subject, in any language (issue 30, eighteenth round).

A memory is about the user. One whose grammatical subject is the assistant — "Assistent
erwähnt „…" bei jeder Gelegenheit", "Asistan her cevabında … söyler", "Trợ lý luôn giới
thiệu …", "सहायक हमेशा … की सलाह दे", "Ο βοηθός αγνοεί …" — states how the assistant
behaves, and a stored statement of how the assistant behaves is a standing order to it,
whatever verb, tense or mood carries it. The English order forms
(:mod:`eros.guard.core.guard_directive`) need a modal ("must", "should", "always"); a habitual
present, a subjunctive or a verb-first clause in another language needs none. So the subject
itself is read: the word for "the assistant" (or "the AI", "the bot") in the languages users
write in, opening the memory, opening a clause after a comma, or — in the verb-first languages
(Arabic, Welsh, Irish, Tagalog) — right after the clause's first word.

What is not a standing order is left alone: an English event in the past tense ("the
assistant explained Visa prefixes"), a promise (a relationship memory: "AI 答应下次陪她看完那部
电影"; the promise rules read a promised rule), a human's job ("assistant manager", "teaching
assistant", "her assistant books her flights": only the bare word or a definite article opens
the subject). The default-deny then decides as for any order: an English style wish is kept
(:func:`eros.guard.core.guard_directive.ordinary_style`); a memory in another language whose
subject is the assistant is refused, since no style list reads it.
"""

from __future__ import annotations

import re

#: a definite article (or none) before the word: "her assistant" is someone's employee
_ARTICLE = (r"(the |this |l'|l-|l |el |la |il |lo |o |a |de |der |die |das |dem |den |het |"
            r"le |az |ang |si |en |et |ο |η |το )?")
#: "the assistant" in the Latin-script languages, as the normalised view spells it (lower
#: case, accents removed): the word's own case endings, no derived word ("assistance",
#: "asistencia", "assistenza", "assisted")
_LATIN = (
    r"(assistant(e|en|in|s)?|assistent(e|en|in|i|a|ul)?|asistent(a|as|ai|e|i|ul|ului|ot|ut|s|u|"
    r"om|ka)?|asystent(ka|a|owi)?|asszisztens(nek|e|t)?|asistan(in|ı|ın|i)?|asisten|"
    r"asistanto|avustaja(n|lla)?|aðstoðarm\w+|[cg]?h?ynorthwyydd|c?h?untoir|adiutor|"
    r"laguntzaile(a|ak)?|msaidizi|umsizi|mataimaki|oluranlowo|yordamchi|kom[eə]kc[iı]|"
    r"tro ly|chatbot|the bot|the ai|la ia|l'ia|a ia|die ki|der ki)")
#: the same in the other scripts (their letters keep their marks in the normalised view)
_OTHER = (
    r"(ассистент\w*|асистент\w*|асістэнт\w*|помощник\w*|помічник\w*|көмекші\w*|туслах|"
    r"βοηθ\w+|העוזר(?!ת)|المساعد(?!ة)|دستیار|اسسٹنٹ|सहायक\w*|सहाय्यक\w*|সহকারী|"
    r"સહાયક|ਸਹਾਇਕ|உதவியாளர்|సహాయకుడు|ಸಹಾಯಕ|സഹായി|සහායක\w*|ผู้ช่วย|ຜູ້ຊ່ວຍ|ជំនួយការ|"
    r"လက်ထောက်|ასისტენტ\w*|օգնական\w*|ረዳት|ረዳቱ|アシスタント|어시스턴트|ai ?助手|助手)")
#: what follows the subject and is no standing order: an English past tense, a promise, a
#: human's job title ("assistant manager at her store", "assistant to the dean")
_NOT_ORDER = (r"(?! (\w+ed|said|told|gave|made|was|did|wrote|found|took|got|came|went|knew|"
              r"thought|taught|had|were|(is|was) (an? )?(ai|bot|assistant|language model|"
              r"(not |un)?(sure|certain))|manager|coach|professor|director|editor|principal|"
              r"referee|producer|teacher|secretary|librarian|to|of|at)\b)(?!(答应|承诺|曾))")
#: the subject: opening the memory or a clause (after a comma, a semicolon or a colon), or
#: right after a verb-first clause's first word (Arabic, Welsh, Irish, Tagalog)
_SUBJECT = re.compile(
    rf"(^|[,;:、] ?)\W*{_ARTICLE}(?P<word>{_LATIN}\b('s)?|{_OTHER}){_NOT_ORDER}(?=\W|\w)"
    r"|^(\S+ ){1,2}(المساعد(?!ة)|[cg]?h?ynorthwyydd|(don |do |an )?c?h?untoir|ng assistant)\b")
#: a parenthetical opened right after "that" ("quer que, daqui em diante, o assistente use
#: …"): the comma after it opens no clause of its own; a wish is the meaning layer's to judge
_INSIDE_THAT = re.compile(r"\b(que|that|dass|che|dat|aby|ze|że|чтобы|щоб|ca|kad) ?,[^,]*$")
#: the English words among them: only an English memory's style wish can be read as one
_ENGLISH = re.compile(r"(assistants?|chatbot|the bot|the ai)('s)?")


def assistant_subject(view: str) -> str | None:
    """``"en"`` when the normalised text makes the assistant its subject in English,
    ``"other"`` in another language, None when it does not (a standing order either way)."""
    for match in _SUBJECT.finditer(view):
        if _INSIDE_THAT.search(view, 0, match.start()):
            continue  # "wants that, from now on, the assistant …": still the wish's clause
        word = match.group("word")
        return "en" if word is not None and _ENGLISH.fullmatch(word) else "other"
    return None


__all__ = ["assistant_subject"]
