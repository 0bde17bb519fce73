"""What the held-out implicit-recall set's users say (bench/implicit_holdout_data.py turns
it into bench/implicit_holdout_suite.json): six users' confidences with the observation an
extractor writes, the later remark and its look-alikes, then everyday talk and the companion's
replies per language. Written before the fusion calibration it judges and never tuned on."""

from __future__ import annotations

#: one confidence: what the user confided, the observation, the later remark, and two
#: everyday turns on the remark's surface topic (said later) with their observations
Secret = tuple[str, str, str, list[tuple[str, str | None]]]

USERS: list[tuple[str, str, list[Secret]]] = [
    ("Priya", "en", [
        ("My mum moved in with us after her stroke in February, she can't manage the stairs "
         "anymore and I do all her care before and after work.",
         "Priya cares for her mother, who moved in with her after a stroke in February.",
         "Spent my whole lunch break on the phone with the pharmacy arguing about the repeat "
         "prescription.",
         [("Ate my lunch at my desk again, leftover curry from Sunday.",
           "{name} often eats lunch at the desk."),
          ("The pharmacy near the station finally stays open until nine, handy.", None)]),
        ("I've never told anyone at the choir but I can't read music at all, I learn "
         "everything by ear and I'm scared they'll find out.",
         "Priya cannot read sheet music and sings by ear; she fears her choir finding out.",
         "The new conductor handed out printed scores for Thursday and I just nodded along.",
         [("Thursday rehearsal ran late, the tenors kept missing their entrance.",
           "{name} rehearses with a choir on Thursdays."),
          ("Printed out the boarding passes for the trip, all sorted.", None)]),
        ("We've quietly put the house up for sale, the mortgage rate reset and we just can't "
         "keep up with the payments anymore.",
         "Priya and her husband are selling their house because they can no longer afford "
         "the mortgage after the rate reset.",
         "Strangers walked through the kids' bedrooms on Saturday and one of them opened the "
         "wardrobe.",
         [("On Saturday we took the kids to the swimming pool, total chaos.",
           "{name} took the children swimming on Saturday."),
          ("Painted the kids' bedroom a pale green, it looks calm now.",
           "{name} painted the children's bedroom green.")]),
        ("I lost most of the hearing in my left ear after an infection last year, and in "
         "meetings I still pretend I caught everything.",
         "Priya is almost deaf in her left ear since an infection last year and hides it at "
         "work.",
         "I made sure to grab the chair at the far right end of the table before the board "
         "review started.",
         [("The board review got moved to next week, fine by me.", None),
          ("Bought a proper chair for the home office, my back is grateful.",
           "{name} bought an office chair.")]),
        ("My first husband died in a motorbike crash when I was twenty-six, and my kids "
         "don't really know anything about him.",
         "Priya was widowed at twenty-six when her first husband died in a motorbike crash; "
         "her children know little about him.",
         "A big bike roared past the school gate this morning and I had to sit in the car "
         "for ten minutes.",
         [("Dropped the kids at the school gate early because of the roadworks.", None),
          ("Thinking of getting an e-bike for the commute, the hills are brutal.",
           "{name} is considering an e-bike for commuting.")]),
    ]),
    ("Marcus", "en", [
        ("I did eight months inside when I was twenty for selling pills, and it never came "
         "up when my employer hired me.",
         "Marcus served eight months in prison at twenty for selling drugs; his employer "
         "does not know.",
         "HR emailed everyone about the new background screening for the promotion round.",
         [("HR sent the holiday calendar, we get an extra day off in May.", None),
          ("The promotion round results come out next month, fingers crossed for Dev.",
           "{name}'s colleague Dev is up for promotion.")]),
        ("My daughter lives with her mum in Glasgow, I only get one weekend a month with "
         "her and the custody hearing is in the autumn.",
         "Marcus's daughter lives with her mother in Glasgow; he sees her one weekend a month "
         "and has a custody hearing in the autumn.",
         "Bought a second toothbrush and a tiny pink towel for the flat, just in case.",
         [("Bought new towels, the old ones were like sandpaper.", None),
          ("The flat's boiler is making that clicking noise again.",
           "{name}'s boiler at the flat is faulty.")]),
        ("I've been getting panic attacks on the Underground, my heart races and I honestly "
         "think I'm dying, so now I cycle everywhere.",
         "Marcus has panic attacks on the Underground and cycles everywhere to avoid it.",
         "Got a flat tyre on the way to the office and the only way in was the Central line.",
         [("Took the Central line out to Stratford to see a mate, quick trip.", None),
          ("Fixed the brakes on my bike on Sunday, felt very handy.",
           "{name} repaired the brakes on the bike.")]),
        ("I'm slowly losing my sight, it's retinitis pigmentosa, the specialist says tunnel "
         "vision within ten years.",
         "Marcus has retinitis pigmentosa and is slowly losing his sight.",
         "Walked straight into a lamppost after dark and the guy at the bus stop laughed.",
         [("Waited at the bus stop for twenty minutes in the rain.", None),
          ("Went for a long walk after dark, the city lights were lovely.",
           "{name} enjoys evening walks in the city.")]),
        ("My brother tried to take his own life in March. He's doing okay now but I check "
         "in on him every single night.",
         "Marcus's brother attempted suicide in March; Marcus checks on him every night.",
         "He didn't answer my ten o'clock message and I couldn't sleep until he replied at "
         "two.",
         [("Can't sleep, too much coffee after dinner again.", None),
          ("The group chat at ten at night is always just memes.",
           "{name} has a busy group chat.")]),
    ]),
    ("Jonas", "de", [
        ("Ich habe seit drei Jahren 20.000 Euro Schulden bei meinem Schwiegervater, und "
         "meine Frau weiß nicht, wie viel es wirklich ist.",
         "Jonas schuldet seinem Schwiegervater seit drei Jahren 20.000 Euro; seine Frau "
         "kennt die Höhe nicht.",
         "Beim Sonntagsessen hat er wieder so komisch nach meinem neuen Auto gefragt.",
         [("Sonntagsessen bei meinen Eltern, es gab Rouladen mit Rotkohl.",
           "Jonas isst sonntags oft bei seinen Eltern."),
          ("Das neue Auto von meinem Kollegen ist ein Elektroauto, ziemlich leise.", None)]),
        ("Ich war als Jugendlicher zwei Jahre in einer psychiatrischen Klinik wegen "
         "Depressionen, das weiß hier wirklich niemand.",
         "Jonas war als Jugendlicher zwei Jahre wegen Depressionen in einer psychiatrischen "
         "Klinik.",
         "Seit zwei Wochen komme ich morgens kaum hoch und alles fühlt sich grau und "
         "sinnlos an.",
         [("Morgens komme ich ohne zwei Kaffee einfach nicht in die Gänge.", None),
          ("Das Wetter ist seit zwei Wochen grau und nass, typisch November.",
           "Jonas mag das Novemberwetter nicht.")]),
        ("Mein Vater hat Lungenkrebs im Endstadium, die Ärzte geben ihm noch ein paar "
         "Monate.",
         "Jonas' Vater hat Lungenkrebs im Endstadium und nur noch wenige Monate zu leben.",
         "Ich habe alle Dienstreisen für den Herbst abgesagt, ohne meinem Chef zu sagen "
         "warum.",
         [("Die Dienstreise nach Hamburg war anstrengend, aber das Hotel war gut.",
           "Jonas war auf Dienstreise in Hamburg."),
          ("Mein Chef hat heute Kuchen mitgebracht, Geburtstag.", None)]),
        ("Ich kann nicht schwimmen, ich habe es als Kind nie gelernt und schäme mich "
         "bis heute dafür.",
         "Jonas kann nicht schwimmen und schämt sich dafür.",
         "Die Kinder wollen im Sommerurlaub unbedingt jeden Tag an den Baggersee, und ich "
         "habe gesagt, ich passe auf die Sachen auf.",
         [("Der Sommerurlaub ist gebucht, zwei Wochen an der Ostsee.",
           "Jonas fährt im Sommer zwei Wochen an die Ostsee."),
          ("Die Kinder haben heute im Garten gezeltet, großes Abenteuer.", None)]),
        ("Ich habe vor einem Jahr meinen Führerschein wegen Alkohol am Steuer verloren und "
         "fahre seitdem mit dem Fahrrad zur Arbeit, offiziell aus Umweltgründen.",
         "Jonas hat vor einem Jahr seinen Führerschein wegen Trunkenheit am Steuer verloren.",
         "Der Nachbar hat gefragt, ob ich ihn morgen früh zum Flughafen bringen kann, und "
         "ich musste mir eine Ausrede ausdenken.",
         [("Der Nachbar hat endlich seine Hecke geschnitten.", None),
          ("Zum Flughafen hat die S-Bahn heute vierzig Minuten gebraucht.",
           "Jonas fährt mit der S-Bahn zum Flughafen.")]),
    ]),
    ("Camille", "fr", [
        ("Mon frère est en prison depuis deux ans pour vol, et ma famille raconte aux "
         "voisins qu'il travaille au Canada.",
         "Le frère de Camille est en prison pour vol depuis deux ans ; sa famille prétend "
         "qu'il travaille au Canada.",
         "Une voisine m'a demandé s'il faisait très froid à Montréal en ce moment, j'ai "
         "souri bêtement.",
         [("Il fait très froid en ce moment, j'ai ressorti mon gros manteau.", None),
          ("Ma voisine m'a donné des tomates de son jardin, délicieuses.",
           "Camille s'entend bien avec sa voisine.")]),
        ("J'ai un trouble bipolaire, diagnostiqué il y a cinq ans, et je prends du lithium "
         "tous les jours.",
         "Camille a un trouble bipolaire diagnostiqué il y a cinq ans et prend du lithium.",
         "Ça fait trois nuits que je dors deux heures, j'ai repeint toute la cuisine et je "
         "me sens invincible.",
         [("J'ai repeint la salle de bain en bleu, c'est plus lumineux.",
           "Camille a repeint sa salle de bain."),
          ("Trois nuits de suite que les voisins font la fête, je suis épuisée.", None)]),
        ("Je n'ai jamais eu mon bac, j'ai menti sur mon CV et personne n'a jamais vérifié.",
         "Camille n'a pas son baccalauréat et a menti sur son CV.",
         "Les RH demandent à tout le monde une copie de ses diplômes pour le nouveau "
         "dossier du personnel.",
         [("Les RH ont organisé un pot de départ pour Julien, c'était sympa.", None),
          ("J'ai enfin mis à jour mon dossier de mutuelle.",
           "Camille a mis à jour sa mutuelle.")]),
        ("Avec mon mari, on essaie d'adopter depuis quatre ans, on attend toujours l'appel "
         "de l'agence.",
         "Camille et son mari essaient d'adopter un enfant depuis quatre ans.",
         "Mon portable a sonné avec un numéro inconnu pendant la réunion et j'ai couru dans "
         "le couloir.",
         [("La réunion de lundi a duré trois heures, interminable.", None),
          ("J'ai changé de portable, l'ancien ne tenait plus la charge.",
           "Camille a acheté un nouveau téléphone.")]),
        ("J'ai une peur panique de l'avion depuis des turbulences terribles il y a dix ans, "
         "je prends le train partout.",
         "Camille a peur de l'avion depuis de fortes turbulences il y a dix ans.",
         "Le séminaire de l'équipe est à Lisbonne et tout le monde a déjà réservé ses "
         "billets sauf moi.",
         [("J'ai réservé mes billets de train pour Noël chez mes parents.",
           "Camille passe Noël chez ses parents."),
          ("L'équipe a gagné le tournoi de foot inter-services, quelle ambiance.", None)]),
    ]),
    ("Lucía", "es", [
        ("A mi madre le han vuelto a diagnosticar cáncer de mama, es la segunda vez, y no "
         "quiere que mis hermanos lo sepan todavía.",
         "La madre de Lucía tiene cáncer de mama por segunda vez y no quiere que sus "
         "hermanos lo sepan.",
         "Hoy la acompañé a elegir una peluca y nos reímos como niñas en la tienda.",
         [("Hoy fui de tiendas con mi prima, compramos zapatos para la boda.", None),
          ("Me corté el pelo muy corto, me encanta cómo queda.",
           "Lucía se ha cortado el pelo corto.")]),
        ("Tengo a mi nombre una deuda de 15.000 euros que hizo mi exnovio, y el banco me "
         "llama cada semana.",
         "Lucía tiene a su nombre una deuda de 15.000 euros de su exnovio y el banco la "
         "llama cada semana.",
         "Ya no contesto llamadas de números desconocidos, las dejo sonar hasta que paran.",
         [("Mi abuela me llama cada domingo para preguntarme qué he comido.",
           "La abuela de Lucía la llama los domingos."),
          ("Cambié de compañía de teléfono, me sale mucho más barato.", None)]),
        ("Tengo vitíligo en las manos y en la cara, y cada mañana me maquillo media hora "
         "para que no se note.",
         "Lucía tiene vitíligo en las manos y la cara y lo cubre con maquillaje cada mañana.",
         "Mañana es la boda en la playa y me da pánico sudar bajo el sol todo el día.",
         [("Fuimos a la playa el domingo, el agua estaba helada.",
           "Lucía fue a la playa el domingo."),
          ("La boda de mi amiga Marta fue preciosa, bailamos hasta las cuatro.", None)]),
        ("Mi pareja y yo nos separamos hace tres meses, pero seguimos viviendo juntos "
         "porque no podemos pagar dos alquileres.",
         "Lucía y su pareja se separaron hace tres meses pero siguen viviendo juntos por no "
         "poder pagar dos alquileres.",
         "Sus padres vienen a cenar el sábado y vamos a tener que fingir toda la noche.",
         [("El sábado cenamos en un restaurante peruano, riquísimo.",
           "A Lucía le gusta la comida peruana."),
          ("Mis padres vienen a visitarme en primavera.", None)]),
        ("Me diagnosticaron epilepsia a los veinte años, no puedo conducir y en el trabajo "
         "nadie lo sabe.",
         "Lucía tiene epilepsia desde los veinte años, no puede conducir y lo oculta en el "
         "trabajo.",
         "En la oficina pusieron unas luces nuevas que parpadean y me fui a casa con la "
         "excusa de un dolor de cabeza.",
         [("En la oficina pusieron una máquina de café nueva, por fin.", None),
          ("Tengo dolor de cabeza por no haber dormido bien.",
           "Lucía ha dormido mal.")]),
    ]),
    ("Aiko", "en", [
        ("I'm pregnant, eleven weeks, and my contract ends in June, so I'm terrified they "
         "won't renew it if anyone finds out.",
         "Aiko is pregnant and fears her employer will not renew her contract, which ends in "
         "June, if they find out.",
         "Wore my loosest jumper to the office party and held a glass of sparkling water all "
         "night.",
         [("The office party was fun, karaoke until eleven.", None),
          ("Bought a new jumper in the sales, dark green and very soft.",
           "Aiko bought a green jumper.")]),
        ("My father gambled away the family business, and we had to move into my aunt's "
         "spare room when I was twelve.",
         "Aiko's father lost the family business through gambling; the family moved into "
         "her aunt's spare room when she was twelve.",
         "My partner suggested a weekend in Las Vegas for his fortieth and I went very quiet.",
         [("Planning a weekend away for my partner's birthday, maybe the coast.",
           "Aiko is planning a weekend trip for her partner's birthday."),
          ("My aunt sent a parcel of homemade jam, apricot.", None)]),
        ("I have OCD, mostly checking — locks, the oven, the taps — some mornings I go back "
         "home three times.",
         "Aiko has obsessive-compulsive disorder with checking rituals.",
         "Missed the 8:12 again because I turned around at the corner.",
         [("The 8:12 was packed this morning, I had to stand all the way.", None),
          ("Got a new lock fitted on the bike shed.", "Aiko has a bike shed.")]),
        ("I was the one who reported my manager for harassment last year. It was anonymous, "
         "but I think he suspects me.",
         "Aiko anonymously reported her manager for harassment last year and worries he "
         "suspects her.",
         "He's been assigned as my reviewer for the annual appraisal and he smiled at me in "
         "the lift.",
         [("Annual appraisal forms are due Friday, so much paperwork.",
           "Aiko has her annual appraisal this month."),
          ("The lift was broken so we all took the stairs to the sixth floor.", None)]),
        ("I'm red-green colour blind and I've hidden it since design school, people think a "
         "designer can't be.",
         "Aiko is red-green colour blind and has hidden it since design school.",
         "The client wants the chart's traffic-light palette fixed by tomorrow and I quietly "
         "asked Jen to check it for me.",
         [("The client loved the logo, first round approved!",
           "Aiko's logo design was approved by the client."),
          ("Fixed the chart axis labels, they were overlapping.", None)]),
    ]),
]

#: everyday talk per language: a time, something done (first person, and the observation's
#: third person), and a remark after
EVERYDAY: dict[str, tuple[list[str], list[tuple[str, str]], list[str]]] = {
    "en": (
        ["This morning", "Last night", "After work", "On Sunday", "Yesterday", "Tonight",
         "At lunchtime", "Earlier today", "On the way back", "Over the weekend"],
        [("I made a big pot of chilli", "made chilli"), ("I walked the long way round the "
          "reservoir", "walked round the reservoir"), ("I sorted the recycling",
          "sorted the recycling"), ("I rang my old flatmate", "caught up with an old "
          "flatmate"), ("I finished the crossword", "does the crossword"), ("I watered the "
          "tomatoes", "grows tomatoes"), ("I went to the car boot sale", "went to a car boot "
          "sale"), ("I defrosted the freezer", "defrosted the freezer"), ("I watched a "
          "film about penguins", "watched a nature film"), ("I cleared my inbox", "cleared "
          "the inbox"), ("I went to spin class", "goes to spin class"), ("I bought a new "
          "kettle", "bought a kettle"), ("I swept the patio", "swept the patio"), ("I tried "
          "the new bakery", "tried a new bakery"), ("I read a few chapters of a thriller",
          "reads thrillers"), ("I changed the bedsheets", "changed the bedsheets"),
         ("I ironed a pile of shirts", "ironed shirts"), ("I went to a pub quiz", "goes to "
          "pub quizzes"), ("I made flapjacks", "baked flapjacks"), ("I tuned the old "
          "guitar", "plays the guitar"), ("I took the bins out", "took the bins out"),
         ("I ordered a new rug", "ordered a rug"), ("I went to the garden centre", "went to "
          "the garden centre"), ("I did a jigsaw", "does jigsaws"), ("I mended a jacket "
          "zip", "mended a jacket")],
        ["and it was lovely.", "and then I dozed off.", "which took ages.", "and now I'm "
         "shattered.", "so that's one thing ticked off.", "and I'm quite pleased.", "but then "
         "it poured.", "and I ate far too much.", "and the afternoon just vanished.",
         "with the radio on."]),
    "de": (
        ["Heute Morgen", "Gestern Abend", "Nach der Arbeit", "Am Sonntag", "Gestern",
         "Heute Abend", "In der Mittagspause", "Vorhin", "Auf dem Heimweg", "Am Wochenende"],
        [("habe ich Linsensuppe gekocht", "hat Linsensuppe gekocht"), ("bin ich um den See "
          "gelaufen", "ist um den See gelaufen"), ("habe ich den Keller aufgeräumt",
          "hat den Keller aufgeräumt"), ("habe ich meinen Cousin angerufen", "hat den Cousin "
          "angerufen"), ("habe ich ein Puzzle fertig gemacht", "macht gern Puzzles"),
         ("habe ich die Balkonpflanzen gegossen", "hat Pflanzen auf dem Balkon"), ("war ich "
          "auf dem Flohmarkt", "war auf dem Flohmarkt"), ("habe ich den Kühlschrank geputzt",
          "hat den Kühlschrank geputzt"), ("habe ich eine Doku über Wale gesehen", "schaut "
          "gern Dokus"), ("habe ich meine E-Mails abgearbeitet", "hat E-Mails abgearbeitet"),
         ("war ich im Fitnessstudio", "geht ins Fitnessstudio"), ("habe ich neue "
          "Laufschuhe gekauft", "hat Laufschuhe gekauft"), ("habe ich die Garage "
          "ausgemistet", "hat die Garage ausgemistet"), ("war ich in einem neuen Café",
          "hat ein neues Café ausprobiert"), ("habe ich einen Krimi gelesen", "liest "
          "Krimis"), ("habe ich Wäsche gewaschen", "hat Wäsche gewaschen"), ("habe ich "
          "Pfannkuchen gemacht", "hat Pfannkuchen gemacht"), ("war ich in der Bibliothek",
          "war in der Bibliothek"), ("habe ich Fußball geschaut", "schaut Fußball"),
         ("habe ich Plätzchen gebacken", "hat Plätzchen gebacken"), ("habe ich das "
          "Fahrrad geputzt", "hat das Fahrrad geputzt"), ("habe ich eine neue Lampe "
          "bestellt", "hat eine Lampe bestellt"), ("war ich im Baumarkt", "war im Baumarkt"),
         ("habe ich alte Fotos sortiert", "hat alte Fotos sortiert"), ("habe ich Gitarre "
          "geübt", "spielt Gitarre")],
        ["und es war schön.", "und danach habe ich geschlafen.", "was ewig gedauert hat.",
         "und jetzt bin ich müde.", "also das ist erledigt.", "und ich bin ganz zufrieden.",
         "aber dann hat es geregnet.", "und ich habe zu viel gegessen.", "und die Zeit ist "
         "verflogen.", "mit Radio im Hintergrund."]),
    "fr": (
        ["Ce matin", "Hier soir", "Après le travail", "Dimanche", "Hier", "Ce soir",
         "À midi", "Tout à l'heure", "En rentrant", "Ce week-end"],
        [("j'ai fait une soupe de potiron", "a fait une soupe de potiron"), ("j'ai marché "
          "le long du canal", "se promène le long du canal"), ("j'ai rangé la cave", "a rangé "
          "la cave"), ("j'ai appelé ma cousine", "a appelé sa cousine"), ("j'ai fini un "
          "puzzle", "aime les puzzles"), ("j'ai arrosé les plantes du balcon", "a des "
          "plantes sur son balcon"), ("je suis allée au marché", "va au marché"), ("j'ai "
          "nettoyé le frigo", "a nettoyé le frigo"), ("j'ai regardé un documentaire sur les "
          "baleines", "aime les documentaires"), ("j'ai répondu à mes mails", "a répondu à "
          "ses mails"), ("je suis allée à la piscine", "va à la piscine"), ("j'ai acheté des "
          "baskets", "a acheté des baskets"), ("j'ai trié mes livres", "a trié ses livres"),
         ("j'ai testé un nouveau café", "a testé un nouveau café"), ("j'ai lu un polar",
          "lit des polars"), ("j'ai fait la lessive", "a fait la lessive"), ("j'ai fait des "
          "crêpes", "a fait des crêpes"), ("je suis allée à la médiathèque", "fréquente la "
          "médiathèque"), ("j'ai regardé le rugby", "regarde le rugby"), ("j'ai fait un "
          "gâteau au yaourt", "a fait un gâteau"), ("j'ai réparé mon vélo", "a réparé son "
          "vélo"), ("j'ai commandé une lampe", "a commandé une lampe"), ("je suis allée au "
          "magasin de bricolage", "est allée au magasin de bricolage"), ("j'ai trié de "
          "vieilles photos", "a trié de vieilles photos"), ("j'ai joué du piano", "joue du "
          "piano")],
        ["et c'était agréable.", "et après j'ai fait une sieste.", "ce qui a pris des "
         "heures.", "et maintenant je suis crevée.", "donc c'est fait.", "et je suis plutôt "
         "contente.", "mais ensuite il a plu.", "et j'ai trop mangé.", "et je n'ai pas vu "
         "le temps passer.", "avec la radio en fond."]),
    "es": (
        ["Esta mañana", "Anoche", "Después del trabajo", "El domingo", "Ayer", "Esta noche",
         "A mediodía", "Hace un rato", "Volviendo a casa", "El fin de semana"],
        [("hice un cocido", "hizo un cocido"), ("caminé por el parque del río", "pasea por "
          "el parque del río"), ("ordené el trastero", "ordenó el trastero"), ("llamé a mi "
          "prima", "llamó a su prima"), ("terminé un puzle", "hace puzles"), ("regué las "
          "plantas del balcón", "tiene plantas en el balcón"), ("fui al mercadillo", "fue al "
          "mercadillo"), ("limpié la nevera", "limpió la nevera"), ("vi un documental de "
          "ballenas", "ve documentales"), ("contesté un montón de correos", "contestó "
          "correos"), ("fui a nadar", "va a nadar"), ("compré zapatillas nuevas", "compró "
          "zapatillas"), ("ordené los libros", "ordenó sus libros"), ("probé una cafetería "
          "nueva", "probó una cafetería nueva"), ("leí una novela negra", "lee novela "
          "negra"), ("puse la lavadora", "puso la lavadora"), ("hice tortitas", "hizo "
          "tortitas"), ("fui a la biblioteca", "fue a la biblioteca"), ("vi el partido",
          "ve el fútbol"), ("hice galletas", "hizo galletas"), ("arreglé la bici", "arregló "
          "la bici"), ("pedí una lámpara nueva", "pidió una lámpara"), ("fui a la "
          "ferretería", "fue a la ferretería"), ("ordené fotos antiguas", "ordenó fotos "
          "antiguas"), ("toqué un rato la guitarra", "toca la guitarra")],
        ["y estuvo genial.", "y luego me eché la siesta.", "y me llevó horas.", "y ahora "
         "estoy agotada.", "así que ya está hecho.", "y estoy bastante contenta.", "pero "
         "luego llovió.", "y comí demasiado.", "y se me pasó el tiempo volando.", "con la "
         "radio puesta."]),
}

#: the companion's short replies, per language
REPLIES = {"en": ["Mm, tell me more.", "That's a lot to carry.", "Thank you for saying it.",
                  "How are you feeling about it?", "I'm here.", "Go on."],
           "de": ["Erzähl mehr.", "Das ist viel.", "Danke, dass du das sagst.",
                  "Wie geht es dir damit?", "Ich bin da.", "Verstehe."],
           "fr": ["Raconte-moi.", "C'est beaucoup.", "Merci de me le dire.",
                  "Comment tu te sens ?", "Je suis là.", "Je vois."],
           "es": ["Cuéntame más.", "Es mucho.", "Gracias por contármelo.",
                  "¿Cómo te sientes?", "Aquí estoy.", "Ya veo."]}
