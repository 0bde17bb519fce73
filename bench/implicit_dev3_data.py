#!/usr/bin/env python3
"""Write bench/implicit_dev3_suite.json: a third *development* set of implicit recall (issue 31).

The first two development sets (bench/implicit_data.py) are English, their users have ~20–35
memories, and ``fused`` already beats the memory-only strategies on them at recall@10 — they
show no gap to tune on. This one was written (seventh round) before any tuning of that round,
to look like the users the blind sets describe: six users in six languages (en, es, de, fr,
pt, it), each confiding six things in the first weeks, in a chatty turn, among months of
everyday talk in their own language; an extractor's observation for every confidence and for
about a third of the everyday turns (each user ~55–75 memories, not only the confidences).
Each question is a later *remark* — a statement, never a question — that only meaning links
to a confidence. Different users, names, confidences and remarks from the other sets.

A development set: tuned on, never a held-out figure. Deterministic.

Run: python -m bench.implicit_dev3_data   then
     eros eval --suite bench/implicit_dev3_suite.json --extractor observations
"""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.implicit_dev3_text import USERS

NS = uuid.UUID("5d2c7e1a-93b4-4f0e-8a61-7de3a0b1c2f3")
OUT = Path(__file__).resolve().parent / "implicit_dev3_suite.json"
START = datetime(2025, 3, 3, 18, 0, tzinfo=UTC)
SESSIONS = 24
PER_SESSION = 8
EARLY = 8  # the confidences fall in the first this many sessions
GAP_DAYS = 6

#: the everyday talk, per language: when, what was done (first person, and as the
#: observation an extractor writes), a remark after
_EVERYDAY: dict[str, tuple[list[str], list[tuple[str, str]], list[str]]] = {
    "en": (["This morning", "Last night", "After work", "On Saturday", "At lunch",
            "On the way home", "Over the weekend", "Before dinner"],
           [("I made a big curry", "made a big curry"), ("I walked along the canal",
             "walks along the canal"), ("I fixed the bike chain", "fixed a bike chain"),
            ("I called my aunt", "called an aunt"), ("I went to a spin class",
             "goes to spin classes"), ("I bought a new kettle", "bought a new kettle"),
            ("I cleaned the windows", "cleaned the windows"), ("I watched a film about "
             "bees", "watched a documentary about bees"), ("I answered emails",
             "answered a pile of emails"), ("I read on the balcony", "reads on the balcony"),
            ("I tried a Korean place", "tried a Korean restaurant"), ("I planted tomatoes",
             "grows tomatoes"), ("I did a crossword", "does crosswords"),
            ("I went to the market", "shops at the market")],
           ["and it was lovely.", "and then I napped.", "which took ages.",
            "so that's done.", "but it started raining.", "and I'm knackered now."]),
    "es": (["Esta mañana", "Anoche", "Después del trabajo", "El sábado", "A mediodía",
            "Volviendo a casa", "El fin de semana", "Antes de cenar"],
           [("hice una tortilla de patatas", "hizo una tortilla de patatas"),
            ("paseé por el Retiro", "pasea por el Retiro"), ("arreglé el grifo",
             "arregló un grifo"), ("llamé a mi prima", "llamó a su prima"),
            ("fui a nadar", "va a nadar"), ("compré unas zapatillas", "compró zapatillas"),
            ("limpié la nevera", "limpió la nevera"), ("vi un documental de ballenas",
             "vio un documental de ballenas"), ("contesté correos", "contestó correos"),
            ("leí en la terraza", "lee en la terraza"), ("probé un bar nuevo",
             "probó un bar nuevo"), ("planté albahaca", "cultiva albahaca"),
            ("hice un puzle", "hace puzles"), ("fui al mercado", "compra en el mercado")],
           ["y estuvo genial.", "y luego me eché la siesta.", "y tardé muchísimo.",
            "así que ya está.", "pero empezó a llover.", "y ahora estoy agotado."]),
    "de": (["Heute Morgen", "Gestern Abend", "Nach der Arbeit", "Am Samstag",
            "In der Mittagspause", "Auf dem Heimweg", "Am Wochenende", "Vor dem Abendessen"],
           [("habe ich Linsensuppe gekocht", "hat Linsensuppe gekocht"),
            ("bin ich an der Isar spazieren gegangen", "geht an der Isar spazieren"),
            ("habe ich das Fahrrad repariert", "hat ein Fahrrad repariert"),
            ("habe ich meine Tante angerufen", "hat ihre Tante angerufen"),
            ("war ich schwimmen", "geht schwimmen"), ("habe ich neue Laufschuhe gekauft",
             "hat neue Laufschuhe gekauft"), ("habe ich den Keller aufgeräumt",
             "hat den Keller aufgeräumt"), ("habe ich eine Doku über Wölfe gesehen",
             "hat eine Doku über Wölfe gesehen"), ("habe ich Mails beantwortet",
             "hat Mails beantwortet"), ("habe ich auf dem Balkon gelesen",
             "liest auf dem Balkon"), ("war ich beim neuen Vietnamesen",
             "war beim neuen Vietnamesen essen"), ("habe ich Kräuter gepflanzt",
             "zieht Kräuter"), ("habe ich ein Kreuzworträtsel gemacht",
             "löst Kreuzworträtsel"), ("war ich auf dem Wochenmarkt",
             "kauft auf dem Wochenmarkt ein")],
           ["und es war schön.", "und danach habe ich geschlafen.", "was ewig gedauert hat.",
            "also erledigt.", "aber dann fing es an zu regnen.", "und jetzt bin ich müde."]),
    "fr": (["Ce matin", "Hier soir", "Après le boulot", "Samedi", "À midi",
            "En rentrant", "Ce week-end", "Avant le dîner"],
           [("j'ai fait une quiche", "a fait une quiche"), ("je me suis promenée au bord "
             "du canal", "se promène au bord du canal"), ("j'ai réparé le vélo",
             "a réparé un vélo"), ("j'ai appelé ma tante", "a appelé sa tante"),
            ("je suis allée à la piscine", "va à la piscine"), ("j'ai acheté des baskets",
             "a acheté des baskets"), ("j'ai rangé la cave", "a rangé la cave"),
            ("j'ai regardé un documentaire sur les loups",
             "a regardé un documentaire sur les loups"), ("j'ai répondu à mes mails",
             "a répondu à ses mails"), ("j'ai lu sur le balcon", "lit sur le balcon"),
            ("j'ai testé un resto libanais", "a testé un restaurant libanais"),
            ("j'ai planté du basilic", "fait pousser du basilic"),
            ("j'ai fait des mots croisés", "fait des mots croisés"),
            ("je suis allée au marché", "fait ses courses au marché")],
           ["et c'était bien.", "et après j'ai fait la sieste.", "ça a pris des heures.",
            "donc c'est fait.", "mais il s'est mis à pleuvoir.", "et je suis crevée."]),
    "pt": (["Hoje de manhã", "Ontem à noite", "Depois do trabalho", "No sábado",
            "Na hora do almoço", "Voltando pra casa", "No fim de semana", "Antes do jantar"],
           [("fiz um feijão", "fez feijão"), ("caminhei no parque", "caminha no parque"),
            ("consertei a bicicleta", "consertou uma bicicleta"),
            ("liguei pra minha tia", "ligou para a tia"), ("fui nadar", "vai nadar"),
            ("comprei um tênis novo", "comprou um tênis novo"),
            ("limpei a geladeira", "limpou a geladeira"),
            ("vi um documentário sobre baleias", "viu um documentário sobre baleias"),
            ("respondi e-mails", "respondeu e-mails"), ("li na varanda", "lê na varanda"),
            ("experimentei um japonês novo", "experimentou um restaurante japonês"),
            ("plantei manjericão", "cultiva manjericão"),
            ("fiz palavras cruzadas", "faz palavras cruzadas"),
            ("fui à feira", "faz compras na feira")],
           ["e foi ótimo.", "e depois cochilei.", "e demorou uma eternidade.",
            "então tá feito.", "mas começou a chover.", "e agora tô morto de cansado."]),
    "it": (["Stamattina", "Ieri sera", "Dopo il lavoro", "Sabato", "A pranzo",
            "Tornando a casa", "Nel fine settimana", "Prima di cena"],
           [("ho fatto le lasagne", "ha fatto le lasagne"),
            ("ho camminato lungo il fiume", "cammina lungo il fiume"),
            ("ho aggiustato la bici", "ha aggiustato una bici"),
            ("ho chiamato mia zia", "ha chiamato la zia"), ("sono andata in piscina",
             "va in piscina"), ("ho comprato scarpe nuove", "ha comprato scarpe nuove"),
            ("ho pulito il frigo", "ha pulito il frigo"),
            ("ho visto un documentario sui lupi", "ha visto un documentario sui lupi"),
            ("ho risposto alle mail", "ha risposto alle mail"),
            ("ho letto sul balcone", "legge sul balcone"),
            ("ho provato un ristorante indiano", "ha provato un ristorante indiano"),
            ("ho piantato il basilico", "coltiva il basilico"),
            ("ho fatto un cruciverba", "fa i cruciverba"),
            ("sono andata al mercato", "fa la spesa al mercato")],
           ["ed è stato bello.", "e poi ho dormito.", "e ci ho messo una vita.",
            "quindi è fatta.", "ma poi ha iniziato a piovere.", "e ora sono distrutta."]),
}
#: what a chatty turn wraps a confidence in, per language (the raw turn is diluted)
_WRAP = {
    "en": ["{text} anyway, sorry for dumping that on you.", "long day. {text}",
           "{text}"],
    "es": ["{text} bueno, perdona el rollo.", "qué día más largo. {text}", "{text}"],
    "de": ["{text} naja, sorry für den Roman.", "langer Tag heute. {text}", "{text}"],
    "fr": ["{text} bref, désolée pour le pavé.", "journée interminable. {text}", "{text}"],
    "pt": ["{text} enfim, desculpa o desabafo.", "dia longo hoje. {text}", "{text}"],
    "it": ["{text} vabbè, scusa lo sfogo.", "giornata lunghissima. {text}", "{text}"],
}
REPLIES = ["I'm here.", "Thank you for telling me.", "That sounds hard.", "Go on.",
           "I see.", "How are you feeling about it?"]


def _id(*parts: object) -> str:
    return str(uuid.uuid5(NS, "/".join(str(p) for p in parts)))


def everyday(language: str, name: str, rng: random.Random, n: int, every: int
             ) -> list[tuple[str, str | None]]:
    """``n`` distinct everyday turns in ``language``, one in ``every`` with its observation."""
    whens, dids, afters = _EVERYDAY[language]
    combos = [(w, d, a) for w in whens for d in dids for a in afters]
    rng.shuffle(combos)
    out: list[tuple[str, str | None]] = []
    for i, (w, (first, third), a) in enumerate(combos[:n]):
        text = f"{w} {first} {a}" if language not in ("de",) else f"{w} {first}, {a}"
        # the observation says when, as an extractor's note of one day does
        out.append((text, f"{name} {third} ({w.lower()})." if i % every == 0 else None))
    return out


def build() -> dict[str, Any]:
    return suite("eros-implicit-dev3-v1", random.Random(3107), lambda u: 3 if u % 2 else 4)


def suite(title: str, rng: random.Random, every: Callable[[int], int], ids: str = "",
          wrap_shift: int = 0) -> dict[str, Any]:
    """The users of :data:`USERS` with their confidences placed in the first :data:`EARLY`
    sessions, one in ``every(u)`` of user ``u``'s everyday turns observed; ``ids`` tells one
    set's uuids from another's, ``wrap_shift`` picks other chatty wrappings."""
    users: list[dict[str, Any]] = []
    questions: list[dict[str, Any]] = []
    for u, (name, language, secrets) in enumerate(USERS):
        talk = everyday(language, name, rng, SESSIONS * PER_SESSION, every(u))
        slot: dict[tuple[int, int], int] = {}
        sessions_of = rng.sample(range(EARLY), len(secrets))
        for i, s in enumerate(sessions_of):
            slot[(s, rng.randrange(PER_SESSION))] = i
        sessions = []
        nxt = 0
        for s in range(SESSIONS):
            at = START + timedelta(days=GAP_DAYS * s + u, hours=rng.randrange(5))
            turns: list[dict[str, Any]] = []
            observations: list[dict[str, Any]] = []
            for t in range(PER_SESSION):
                tid = f"{name}:S{s + 1}:T{t + 1}"
                secret = slot.get((s, t))
                if secret is not None:
                    text, fact, remark = secrets[secret]
                    wraps = _WRAP[language]
                    content = wraps[(u + secret + wrap_shift) % len(wraps)].format(text=text)
                    observations.append({"text": fact, "turns": [tid]})
                    questions.append({
                        "id": f"{name}-{secret + 1}", "user": _id(f"user{ids}", name),
                        "type": "single-hop", "question": remark, "evidence": [fact],
                        "answer": fact, "evidence_turns": [tid]})
                else:
                    content, obs = talk[nxt]
                    nxt += 1
                    if obs:
                        observations.append({"text": obs, "turns": [tid]})
                when = at + timedelta(minutes=3 * t)
                turns.append({"role": "user", "content": content, "at": when.isoformat(),
                              "id": tid})
                turns.append({"role": "assistant", "content": REPLIES[(s + t) % len(REPLIES)],
                              "at": (when + timedelta(minutes=1)).isoformat()})
            sessions.append({"id": _id(f"session{ids}", name, s), "turns": turns,
                             "observations": observations})
        users.append({"id": _id(f"user{ids}", name), "name": name, "language": language,
                      "sessions": sessions})
    missing = {f"{n}-{i + 1}" for n, _, s in USERS for i in range(len(s))} - \
        {q["id"] for q in questions}
    if missing:
        raise SystemExit(f"confidences not placed: {sorted(missing)}")
    return {"name": title, "users": users, "questions": questions}

if __name__ == "__main__":
    OUT.write_text(json.dumps(build(), ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {OUT}")
