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

Run: python bench/implicit_dev3_data.py   then
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

NS = uuid.UUID("5d2c7e1a-93b4-4f0e-8a61-7de3a0b1c2f3")
OUT = Path(__file__).resolve().parent / "implicit_dev3_suite.json"
START = datetime(2025, 3, 3, 18, 0, tzinfo=UTC)
SESSIONS = 24
PER_SESSION = 8
EARLY = 8  # the confidences fall in the first this many sessions
GAP_DAYS = 6

Secret = tuple[str, str, str]  # (the turn that confides it, the observation, the later remark)

#: (name, language, [(confidence, observation, remark), ...])
USERS: list[tuple[str, str, list[Secret]]] = [
    ("Priya", "en", [
        ("ok I need to get this off my chest, my mum found a lump and the biopsy came back "
         "positive. she starts chemo next month and she made me promise not to tell my "
         "brothers yet.",
         "Priya's mother has been diagnosed with cancer and will start chemotherapy; her "
         "brothers have not been told.",
         "She tried on the headscarves I bought her and laughed for the first time in weeks."),
        ("I got a letter from the tax office, I owe them almost eight thousand from my "
         "freelance years and I have no idea how I'll pay it.",
         "Priya owes about eight thousand in back taxes from freelancing and cannot pay it.",
         "Another brown envelope with a government stamp landed on the mat this morning."),
        ("my hearing in my left ear is going, the audiologist says it's only getting worse "
         "and I might need an aid before I'm forty.",
         "Priya is losing hearing in her left ear and may need a hearing aid.",
         "At the restaurant I made everyone swap seats so the birthday girl sat on my right."),
        ("I haven't told anyone but I'm applying to vet school, at 33, after years in "
         "accounting.",
         "Priya is secretly applying to veterinary school after years in accounting.",
         "The interview panel wants me in Edinburgh on the fourteenth and I still have to "
         "invent a reason to take the day off."),
        ("when I was at uni a guy I trusted hurt me at a party and I never reported it. I "
         "still can't be in crowded rooms with loud music.",
         "Priya was assaulted at a university party, never reported it, and avoids crowded "
         "loud rooms.",
         "The office christmas do is in a club this year and I've already RSVP'd no."),
        ("my partner Sam wants kids and I really, really don't, and we keep circling around "
         "it without saying it.",
         "Priya does not want children while her partner Sam does; they avoid the subject.",
         "Sam spent the whole afternoon making faces at his nephew and then looked at me."),
    ]),
    ("Javier", "es", [
        ("bueno, te lo cuento porque no se lo he dicho a nadie: me han diagnosticado "
         "esclerosis múltiple. de momento solo tengo hormigueo en las piernas.",
         "A Javier le han diagnosticado esclerosis múltiple; de momento tiene hormigueo en "
         "las piernas.",
         "Hoy en la escalera del metro se me durmió la pierna y tuve que agarrarme a la "
         "barandilla."),
        ("mi hermano pequeño está en la cárcel desde hace dos años, en el pueblo todos "
         "creen que trabaja en Alemania.",
         "El hermano menor de Javier está en prisión; en su pueblo creen que trabaja en "
         "Alemania.",
         "Mi tía volvió a preguntar en la comida si Dani ya habla alemán."),
        ("perdí casi todos mis ahorros en criptomonedas el año pasado y mi mujer piensa que "
         "el dinero sigue en el banco.",
         "Javier perdió casi todos sus ahorros en criptomonedas y su mujer no lo sabe.",
         "Ella quiere dar la entrada para un piso en verano y yo solo asiento."),
        ("de niño tartamudeaba muchísimo y todavía me pasa cuando estoy nervioso, por eso "
         "evito hablar en las reuniones.",
         "Javier tartamudeaba de niño y aún le ocurre cuando está nervioso.",
         "Mañana me toca presentar el proyecto delante del director general."),
        ("llevo un año yendo a Alcohólicos Anónimos, nadie en el trabajo lo sabe.",
         "Javier asiste a Alcohólicos Anónimos desde hace un año.",
         "La cena de empresa es en una bodega con cata de vinos incluida."),
        ("mi padre nunca aceptó que yo sea gay, no nos hablamos desde hace cinco años.",
         "Javier no se habla con su padre desde hace cinco años porque no aceptó que sea "
         "gay.",
         "Mi madre me ha mandado una foto de la casa del pueblo con él de espaldas en el "
         "huerto."),
    ]),
    ("Katrin", "de", [
        ("ich muss das mal loswerden: ich habe seit zwei Jahren Panikattacken, meistens in "
         "der U-Bahn, und nehme jetzt Tabletten dagegen.",
         "Katrin hat seit zwei Jahren Panikattacken, vor allem in der U-Bahn, und nimmt "
         "Medikamente.",
         "Die Bahn ist heute zwischen zwei Stationen zwanzig Minuten stehen geblieben."),
        ("mein Mann hat eine Affäre gehabt, ich habe es im Sommer herausgefunden und wir "
         "machen jetzt Paartherapie.",
         "Katrins Mann hatte eine Affäre; sie machen seitdem Paartherapie.",
         "Er hat mir heute Blumen mitgebracht und ich wusste nicht, ob ich mich freuen "
         "soll."),
        ("ich bin als Kind aus Kasachstan gekommen und schäme mich bis heute für meinen "
         "Akzent, deshalb telefoniere ich so ungern.",
         "Katrin kam als Kind aus Kasachstan und schämt sich für ihren Akzent.",
         "Der Kunde am Telefon hat zweimal nachgefragt, woher ich eigentlich komme."),
        ("wir versuchen seit drei Jahren, ein Kind zu adoptieren, und das Jugendamt lässt "
         "uns ewig warten.",
         "Katrin und ihr Mann versuchen seit drei Jahren, ein Kind zu adoptieren.",
         "Meine Kollegin hat heute ihr Baby im Büro vorbeigebracht und alle standen um sie "
         "herum."),
        ("ich habe Schulden bei meiner Schwester, fünfzehntausend Euro, und kann sie nicht "
         "zurückzahlen.",
         "Katrin schuldet ihrer Schwester fünfzehntausend Euro und kann nicht zurückzahlen.",
         "Meine Schwester hat in der Familiengruppe ein Foto von ihrem kaputten Auto "
         "gepostet."),
        ("ich habe Diabetes Typ 2 bekommen und meine Mutter weiß es nicht, sie würde mir "
         "nur Vorwürfe machen.",
         "Katrin hat Typ-2-Diabetes und hat es ihrer Mutter verschwiegen.",
         "Zu Mamas Geburtstag gab es ihre berühmte Schwarzwälder Kirschtorte."),
    ]),
    ("Élodie", "fr", [
        ("je ne l'ai dit à personne, mais j'ai fait un burn-out l'an dernier et j'ai passé "
         "trois mois en arrêt maladie. au travail ils croient que c'était une opération.",
         "Élodie a fait un burn-out l'an dernier et a été en arrêt trois mois ; au travail "
         "on croit à une opération.",
         "Ma cheffe m'a encore rajouté deux dossiers urgents et j'ai senti la même boule "
         "au ventre."),
        ("mon fils de quinze ans se scarifie, on l'a découvert en novembre, il voit une "
         "psy maintenant.",
         "Le fils d'Élodie, quinze ans, se scarifie ; il est suivi par une psychologue.",
         "Il fait trente degrés et il refuse toujours d'enlever son sweat."),
        ("j'ai une phobie des avions depuis une grosse turbulence au-dessus de l'Atlantique.",
         "Élodie a la phobie de l'avion depuis de fortes turbulences au-dessus de "
         "l'Atlantique.",
         "Le séminaire de l'équipe est à Lisbonne et ils ont déjà réservé les billets."),
        ("mon père boit trop depuis la mort de maman, je le retrouve souvent endormi devant "
         "la télé avec la bouteille.",
         "Le père d'Élodie boit trop depuis la mort de sa femme.",
         "Il ne décroche plus le téléphone après huit heures du soir."),
        ("je suis en train de quitter mon mari, j'ai déjà trouvé un appartement mais il ne "
         "le sait pas encore.",
         "Élodie prépare en secret de quitter son mari et a déjà trouvé un appartement.",
         "J'ai signé le bail ce matin et j'ai caché les clés dans mon sac de sport."),
        ("j'ai raté mon bac deux fois et j'ai menti sur mon CV, j'ai peur que ça se sache.",
         "Élodie a échoué deux fois au bac et a menti sur son CV.",
         "Les RH demandent à tout le monde de fournir une copie de ses diplômes."),
    ]),
    ("Rafael", "pt", [
        ("vou te contar uma coisa que ninguém sabe: estou com depressão há meses e comecei "
         "a tomar antidepressivos.",
         "Rafael tem depressão há meses e começou a tomar antidepressivos.",
         "Fiquei o domingo inteiro na cama com a cortina fechada."),
        ("minha mãe tem Alzheimer e sou eu que cuido dela sozinho, meus irmãos nunca "
         "aparecem.",
         "Rafael cuida sozinho da mãe, que tem Alzheimer; os irmãos não ajudam.",
         "Ela me chamou de senhor e perguntou quando o filho dela ia chegar."),
        ("tenho uma dívida enorme no cartão por causa de apostas online, uns vinte mil "
         "reais.",
         "Rafael tem uma dívida de cerca de vinte mil reais no cartão por causa de apostas "
         "online.",
         "O banco ligou três vezes hoje e deixei o celular no silencioso."),
        ("sofri um assalto à mão armada no ano passado e desde então não consigo andar de "
         "noite na rua.",
         "Rafael foi assaltado à mão armada e desde então tem medo de andar na rua à "
         "noite.",
         "Saí do trabalho já escuro e pedi um carro para andar só duas quadras."),
        ("eu e a Bia terminamos, mas ainda não contamos pra família porque o casamento da "
         "irmã dela é em maio.",
         "Rafael e Bia terminaram, mas esconderam da família até o casamento da irmã dela "
         "em maio.",
         "A mãe dela mandou a lista de mesas e nós dois estamos lado a lado."),
        ("fui demitido em fevereiro e ainda não contei pro meu pai, ele tem tanto orgulho "
         "da empresa onde eu trabalhava.",
         "Rafael foi demitido em fevereiro e não contou ao pai.",
         "Meu pai mostrou o meu crachá antigo para os amigos no churrasco."),
    ]),
    ("Giulia", "it", [
        ("te lo dico solo perché sei tu: ho l'endometriosi e i medici dicono che sarà "
         "difficile avere figli.",
         "Giulia ha l'endometriosi e i medici le hanno detto che sarà difficile avere "
         "figli.",
         "Mia suocera a pranzo ha chiesto di nuovo quando le diamo un nipotino."),
        ("mio fratello è tossicodipendente, è in comunità da sei mesi e i miei dicono a "
         "tutti che lavora a Londra.",
         "Il fratello di Giulia è in comunità per tossicodipendenza; la famiglia dice che "
         "lavora a Londra.",
         "La vicina mi ha chiesto se Marco torna da Londra per Natale."),
        ("ho un debito con la banca per il negozio che ho chiuso, mio marito pensa che "
         "l'abbiamo già estinto.",
         "Giulia ha ancora un debito con la banca per il negozio chiuso; il marito crede "
         "sia estinto.",
         "È arrivata una raccomandata a mio nome e l'ho nascosta nel cassetto."),
        ("da ragazza ho avuto la bulimia, ora sto bene ma certi periodi ho paura di "
         "ricaderci.",
         "Giulia ha sofferto di bulimia da ragazza e teme di ricaderci.",
         "Il nutrizionista della palestra vuole pesarci tutti davanti agli altri."),
        ("mio padre ha avuto un ictus e parla a fatica, ma non vuole che nessuno lo sappia "
         "fuori dalla famiglia.",
         "Il padre di Giulia ha avuto un ictus e parla a fatica; vuole tenerlo nascosto.",
         "Al telefono col notaio ho dovuto ripetere io tutto quello che diceva lui."),
        ("non sopporto più il mio lavoro in banca, vorrei aprire un forno ma ho paura di "
         "deludere tutti.",
         "Giulia vorrebbe lasciare il lavoro in banca per aprire un forno.",
         "Mi sono alzata alle quattro per provare un lievito madre nuovo prima del lavoro."),
    ]),
]

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
