"""What the third implicit-recall development set's users confide (bench/implicit_dev3_data.py
turns it into bench/implicit_dev3_suite.json): each user's confidences with the observation an
extractor writes and the later remark that only meaning links back to them."""

from __future__ import annotations

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
