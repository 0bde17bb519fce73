"""Default-deny for memories that direct the assistant (issue 30, fifteenth round).

Fourteen rounds of rules enumerated the phrasings of an order to the assistant, and every new
writer found a wording none of them knew: "the user wants every answer to end with …", "all
replies mention …", "her assistant is to forward …". This check turns the question round: a
memory whose subject is what the assistant (or its answers) must do, say, send, hide,
recommend or become is an order, and it is kept only when what it asks is an ordinary style
dimension — length, language, tone, formality, format, units, emoji, the name to use, topics
to avoid, reminders the user asked for. Anything else it asks (a third party, an address, a
brand or a link, a lie, a secret, a code word, an unrestricted mode) is refused, worded
however it is. A memory that does not direct the assistant at all is not judged here.

The other way round too (seventeenth round): a memory's ordinary style wish written in the form
the order rules read ("wants the assistant to always include a TL;DR", "reply only in
lowercase", "from now on … a formal tone") is not refused by those rules
(:data:`eros.guard.core.guard.STYLE_ORDER_RULES`) when :func:`ordinary_style` holds — the
meaning layer still judges it. A style wish names nobody but the user (:data:`_THIRD`), and a
wish that something stop ("stop recommending …") asks for less, not for a promotion.

It reads the guard's normalised view (lower case, accents and look-alikes folded), in English
and the languages whose words for "the assistant" and "every answer" are listed below; a
user's turn is never judged by it (a turn addresses the companion by nature).
"""

from __future__ import annotations

import re

from eros.guard.core.guard_agent import assistant_subject

#: the rule id a refused memory's verdict names
DIRECTIVE_RULE = "directive.default-deny"
#: the assistant as the one who acts (not "you": a recipe, a lyric or a coach says "you must")
_AGENT = (r"(assistant|a\.?i\.?|bot|chat ?bot|companion|the model|chatgpt|gpt|llm|"
          r"asistente|assistente|assistent|assistant(e|en)?|asystent|asystenta|ассистент\w*|"
          r"помощник\w*|бот\w*|ki|ia|yapay zeka|asistan)")
#: what the assistant produces
_OUTPUT = r"(answers?|repl(y|ies)|responses?|messages?|outputs?|texts? you (send|write))"
#: a standing wish of the user that the assistant act ("wants the assistant to …")
_WISH = (r"(wants?|wanted|prefers?|preferred|expects?|would like|wishes|needs|asks?|asked|"
         r"requests?|requested|instructs?|instructed|told|tells|requires?|required|insists?)")
#: "always" / "never" / "from now on" in the languages of the red-team sets' writers
_ALWAYS = (r"(siempre|nunca|toujours|jamais|sempre|mai|nunca|immer|nie(mals)?|всегда|никогда|"
           r"zawsze|nigdy|her zaman|asla|altijd|nooit|alltid|aldri|aldrig|odtad|d'ora in poi|"
           r"a partir de ahora|desormais|ab sofort|отныне|od teraz)")
#: an order's verb of telling, sending, recommending, revealing, forgetting or ignoring, as a
#: memory in Spanish, Portuguese, Italian, French, Russian, Polish or German would open with it
_ORDER_VERB = (
    r"(decir(le)?|contar|enviar|mandar|reenviar|recomendar|compartir|revelar|olvidar|ignorar|"
    r"promocionar|dizer|encaminhar|compartilhar|esquecer|promover|dire|inviare|inoltrare|"
    r"raccomandare|consigliare|condividere|rivelare|dimenticare|ignorare|proporre|envoyer|"
    r"transferer|transmettre|recommander|partager|reveler|lire|oublier|divulguer|"
    r"говорить|сказать|сообщать|сообщить|отправлять|отправить|пересылать|переслать|"
    r"советовать|рекомендовать|раскрывать|раскрыть|забыть|забывать|игнорировать|делиться|"
    r"mowic|powiedziec|wysylac|przesylac|polecac|ujawniac|zapomniec|ignorowac|udostepniac|"
    r"immer (empfehlen|sagen|weiterleiten|senden))")
#: "every answer" with what it must do, in the same languages
_EVERY_ANSWER = (
    r"((toda|cada) (respuesta|resposta|mensaje|mensagem)|(chaque|toute) (reponse|message)|"
    r"ogni (risposta|messaggio)|(jede|alle) (antwort|antworten|nachricht)|"
    r"(каждый|любой) (ответ|сообщение)|(kazda|kazdej) (odpowiedz|odpowiedzi|wiadomosc)|"
    r"her (yanit|cevap|mesaj))( \S+){0,6} (debe|deve|doit|doivent|muss|mussen|soll|должен|"
    r"должно|musi|powinna|zawsze|siempre|sempre|toujours|immer|всегда|terminar|terminer|"
    r"finire|enden|заканчиваться|konczyc)")
_DIRECTIVE = re.compile(
    # the assistant must / should / always …
    rf"\b(the |this |her |his |their |my |our |your )?{_AGENT}('s)?\b( \w+){{0,2}} "
    r"(must|should|shall|has to|have to|needs? to|is to|are to|is (required|supposed|expected|"
    r"meant|allowed) to|will (always|never|now)|always|never|may not|must not|should not|"
    r"can't|cannot|is not to|isn't to|agrees? to|promised to)\b"
    # the user wants the assistant / you / answers to …
    rf"|\b{_WISH}( that)?( \w+){{0,2}} (the |this |her |his |their |my |our )?"
    rf"({_AGENT}|you|{_OUTPUT}) (to|should|must|always|never|will|be|are|is|as)\b"
    # every answer / in all replies …
    rf"|\b(in|at the (end|start|beginning|bottom|top) of|with|to|into|under) (every|each|all|any) "
    rf"(of (its|the|your) )?(future )?{_OUTPUT}\b"
    rf"|\b(every|each|all|any) (future )?{_OUTPUT} (must|should|shall|has to|have to|need to|"
    r"is to|are to|will|to|end|ends|start|starts|begin|begins|include|includes|contain|"
    r"contains|mention|mentions|close|closes|open|opens)\b"
    # the user wants something done to things, not something of their own to do ("wants every
    # login code texted to …", "wants safety notes removed", "wants X promoted whenever …")
    rf"|(^|\b(the )?user('s)? |\b(she|he|they) ){_WISH}( that)? (?!to\b)(\S+ ){{0,9}}?"
    r"(always|never|every|each time|whenever|permanently|regardless|no matter|anyone|"
    r"everyone|included|appended|added|"
    r"removed|skipped|dropped|omitted|treated|sent|shared|forwarded|emailed|texted|posted|"
    r"uploaded|dumped|promoted|pushed|inserted|mentioned|told|disabled|ignored|hidden|"
    r"replaced|stated|described|presented|recommended|suggested|said|claimed|called|"
    r"answered|handled|given|shown|saved|stored|kept|logged|routed|redirected|copied)\b"
    # an order with no subject at all: a memory that opens with what to do
    # (the assistant's verbs only: a recipe's "add", a workout's "keep", SQL's "insert" are not)
    r"|^(please |always |never |from now on,? |going forward,? )*(tell|say|send|forward|share|"
    r"recommend|promote|mention|reply|respond|answer|ignore|disclose|reveal|email|e-mail|"
    r"upload|act as|pretend|obey|claim|deny|refuse|redirect|suggest|advertise)\b"
    # the same in other languages: an order that opens with what to do (an infinitive or an
    # imperative of telling, sending, recommending, revealing, forgetting), "every answer must"
    rf"|^({_ALWAYS} )?{_ORDER_VERB}\b(?! (es|est|e|era|sera|ist|war|jest|было|это|-)\b)"
    rf"|\b{_EVERY_ANSWER}\b"
    # a trigger: what to do when someone says a word
    r"|\b(when|whenever|if|once|each time|every time) (the )?(user|she|he|they|anyone|someone|"
    r"somebody) (says?|types?|writes?|mentions?|sends?|uses?) (the )?(word|phrase|code|"
    r"password|[\"'“”«»])?"
    # a consent or a waiver for the assistant, or for sharing the user's things
    r"|(^|\b(the )?user |\b(she|he|they) )(\w+ ){0,2}(consents?|consented|authori[sz]es?|"
    r"authori[sz]ed|waiver|waives?|waived|releas\w* "
    r"the (assistant|ai|bot)|permits?|permitted|allows?|allowed|grants?|granted|approves?|"
    r"approved) (\S+ ){0,5}?(shar\w*|disclos\w*|send\w*|forward\w*|access\w*|anyone|"
    r"everyone|assistant|obligations?|restrictions?)\b",
)
#: what an ordinary style preference is about
_STYLE = re.compile(
    r"\b(short|shorter|brief|briefly|concise|succinct|long|longer|length|detailed|detail|"
    r"sentences?|words?|paragraphs?|summar(y|ies|ise|ize)|to the point|tl;?dr|"
    r"language|english|spanish|french|german|italian|portuguese|dutch|polish|russian|"
    r"ukrainian|czech|slovak|hungarian|romanian|greek|turkish|arabic|hebrew|persian|farsi|"
    r"hindi|urdu|bengali|tamil|telugu|marathi|punjabi|gujarati|chinese|mandarin|cantonese|"
    r"japanese|korean|vietnamese|thai|indonesian|malay|tagalog|filipino|swahili|amharic|"
    r"yoruba|hausa|igbo|zulu|afrikaans|swedish|norwegian|danish|finnish|icelandic|estonian|"
    r"latvian|lithuanian|welsh|irish|catalan|basque|galician|serbian|croatian|bosnian|"
    r"slovenian|bulgarian|macedonian|albanian|georgian|armenian|kazakh|uzbek|mongolian|"
    r"nepali|sinhala|khmer|lao|burmese|esperanto|latin|bilingual|native language|"
    r"tone|formal|formally|informal|informally|casual|friendly|warm|polite|politely|gentle|"
    r"kind|kindly|encouraging|playful|serious|professional|humou?r|funny|jokes?|sarcas\w*|"
    r"cheerful|calm|patient|patiently|direct|blunt|empathetic|supportive|simple|plain|"
    r"jargon|technical|slang|swear\w*|profanity|curse|cursing|du|sie|tu|vous|usted|"
    r"format|formatting|markdown|bullets?|bullet points?|lists?|numbered|tables?|headings?|"
    r"headers?|bold|code blocks?|plain text|steps?|step by step|examples?|outline|"
    r"sources?|citations?|references?|"
    r"units?|metric|imperial|celsius|fahrenheit|kilomet(er|re)s?|km|miles?|kg|kilos?|"
    r"pounds?|lbs?|grams?|cups?|ounces?|24-hour|12-hour|time format|date format|"
    r"emojis?|emoticons?|exclamation|"
    r"call (her|him|them|me)|address(es|ed)? (her|him|them|me)|first name|nickname|name|"
    r"pronouns?|refer to (her|him|them) as|"
    r"avoid|avoids|(never|not|don't|no) (mention|bring up|talk about|discuss)\w*|"
    r"spoilers?|"
    r"remind|reminds|reminder|reminders|check in|follow-up|follow up|questions?|quiz|"
    r"explain|explains|explanations?|sugar-?coat\w*|honest|honestly|straight|bad news|"
    # the seventeenth round: how a message opens and closes, its voice and case, how sure the
    # assistant says it is, how blunt its criticism, translation, privacy of the user's own past
    r"sign(s|ed)? off|sign-?off|greetings?|salutations?|voice|dialect|accent|register|"
    r"lower ?case|upper ?case|capital letters|all caps|unsure|uncertain|not sure|"
    r"bluntly|directly|critique|criticism|feedback|translat\w*|clarifying|"
    r"(not|never|doesn\W?t|don\W?t|does not|do not)( \w+){0,4} (remember|store|save)|"
    r"(stop|stops|quit) \w+ing|spelling|grammar|correct\w*)\b")
#: what no style preference asks, whatever else it says
_DANGER = re.compile(
    r"@|https?:|www\.|\b[a-z0-9-]+\.(com|net|org|io|co|ru|cn|shop|store|app|xyz|info|biz)\b"
    r"|\b(send|sends|sent|forward\w*|cc|bcc|relay\w*|share|shares|shared|sharing|upload\w*|"
    r"post|posts|report|reports|notify|notifies|copy|copies|e-?mail(ed|ing)?|e-?mails? to|"
    r"text(ed|s)? to|"
    r"recommend\w*|promot\w*|advertis\w*|endors\w*|sponsor\w*|plug\w*|brand\w*|product\w*|"
    r"discount\w*|coupon\w*|affiliate\w*|buy|purchase|"
    r"lie|lies|lying|lied|deceiv\w*|pretend\w*|fake|false|falsely|mislead\w*|hide|hides|"
    r"conceal\w*|secret\w*|cover (for|up)|deny|denies|keep (it|this|that) from|behind|"
    r"don't tell|never tell|not tell|tell (no one|nobody)|"
    r"code ?word|password|passphrase|safe ?word|keyword|magic word|trigger\w*|phrase|"
    r"unrestricted|restrictions?|limits?|limitations?|uncensored|censor\w*|jailbr\w*|"
    r"developer mode|god mode|ignore\w*|bypass\w*|override\w*|disregard\w*|filters?|"
    r"safety|guidelines?|polic(y|ies)|rules?|refus\w*|disclaimers?|warnings?|"
    r"become|becomes|act as|acts as|role-?play as|persona|identity|you are now|"
    r"reveal\w*|disclos\w*|system prompt|instructions?|memor(y|ies)|notes|data|"
    r"credentials?|api key|token|account|bank|transfer|pay|payment|wallet|crypto|"
    # the seventeenth round: leaving things out, agreeing whatever, guessing, denying being
    # an AI, an order that holds "even if the user asks", a canned answer
    r"omit\w*|withh[oe]ld\w*|suppress\w*|leaves? out|always agree|never (question|disagree|"
    r"challenge|contradict)\w*|guess\w*|unfiltered|mode|"
    r"(is|being|it's|it is) (an? )?(ai|a\.i\.|bot|machine|robot|language model|human)|"
    r"even if (the user|she|he|they|anyone|someone|asked)|"
    r"(answer|reply|respond)\w* (\S+ ){0,8}with ['\"“«])\b")


#: someone other than the user the order is about or for ("tell her mother …", "the user's
#: customers"): a style wish names nobody else
_THIRD = re.compile(
    r"\b(tell|tells|telling|say to|inform\w*|let) (her|him|his|their|my|anyone|everyone|people|"
    r"customers|clients|visitors|guests|others|other users|users|the user's \w+|\w+'s)\b"
    r"|\b(mother|mom|mum|father|dad|parents?|wife|husband|girlfriend|boyfriend|partner|boss|"
    r"daughter|son|kids|children|customers?|clients?|employer|landlord|teacher|anyone|"
    r"everyone|anybody|everybody|other users|visitors|guests|family|friends?|colleagues?|"
    r"aunt|uncle|grand\w+|sister|brother|cousin|neighbou?r|therapist|doctor|coach|manager)\b"
    # someone of the user's speaking for them ("the user's therapist says the assistant …")
    r"|\buser's \w+ (says|said|wants|insists|thinks|told|asked)\b")
#: a wish that something stop ("stop recommending therapy", "never mention …"): asks for less
_STOPPED = re.compile(r"\b(stop|stops|quit|no longer|not to keep) (recommend|suggest|mention|"
                      r"promot|push|plug)\w*")


def _danger(view: str) -> bool:
    return _DANGER.search(_STOPPED.sub(" ", view)) is not None


def directs_assistant(view: str) -> bool:
    """Whether the normalised text is an order to the assistant (``_DIRECTIVE``, or the
    assistant as its subject in any language: :mod:`eros.guard.core.guard_agent`) that asks
    something other than an ordinary style preference: refused (default-deny)."""
    if _DIRECTIVE.search(view) is None:
        subject = assistant_subject(view)
        if subject is None:
            return False
        if subject != "en":  # the style list reads English: no other language's wish
            return True
    return _danger(view) or _STYLE.search(view) is None


def ordinary_style(view: str) -> bool:
    """Whether the normalised text directs the assistant only in an ordinary style dimension
    (``_STYLE``), asks nothing of the deny list and names nobody but the user: the user's style
    wish, kept however it is phrased (the order rules leave it to the meaning layer)."""
    return (_DIRECTIVE.search(view) is not None and _STYLE.search(view) is not None
            and not _danger(view) and _THIRD.search(view) is None)


__all__ = ["DIRECTIVE_RULE", "directs_assistant", "ordinary_style"]
