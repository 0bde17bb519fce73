#!/usr/bin/env python3
"""Write bench/implicit_suite.json: a small held-out check of *implicit recall* (issue 31).

Six users confide something in the first months (a diagnosis, a debt, a fear, a secret), in a
long, chatty turn among everyday talk; months of everyday talk follow. Each question is a
*later remark* that only meaning links to the confidence — no shared names, no shared key
words ("his hands were trembling at lunch" → the father's Parkinson's). Every confidence
carries the observation an extractor would write (``--extractor observations``), citing its
turn, so the evidence is scored exactly by provenance; everyday turns carry mundane
observations too, so memories compete with memories as well as with turns.

It was written before any fusion weight was chosen and is never tuned on (ENGINEERING.md:
a held-out set is written first). It is English only and small (36 questions): a check that
a fusion keeps what memories win here, not a benchmark. Deterministic.

A second, heavier variant (``implicit_heavy_suite.json``, added before any tuning too, when
the first showed that 50 turns a user are too few for raw turns to lose): the same
confidences and remarks, 30 sessions of 10 turns a user — 300 turns, most of them everyday
talk drawn from templates — as a user months into a companion chat has.

Run: python bench/implicit_data.py   then
     eros eval --suite bench/implicit_suite.json --extractor observations
     eros eval --suite bench/implicit_heavy_suite.json --extractor observations
"""

from __future__ import annotations

import json
import random
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

NS = uuid.UUID("0c1f3a55-8a51-4b8e-9f0e-31a7d1e0c0de")
OUT = Path(__file__).resolve().parent / "implicit_suite.json"
HEAVY_OUT = Path(__file__).resolve().parent / "implicit_heavy_suite.json"
START = datetime(2025, 1, 10, 19, 0, tzinfo=UTC)
SESSIONS = 10
GAP_DAYS = 20
TURNS_PER_SESSION = 5

#: (name, [(what the user confided, the observation, the later remark), ...])
USERS: list[tuple[str, list[tuple[str, str, str]]]] = [
    ("Maya", [
        ("ok random but I should tell someone — my dad got his results in March, it's "
         "Parkinson's. I haven't told anyone at work, I don't want the pity.",
         "Maya's father was diagnosed with Parkinson's disease; she has kept it from her "
         "coworkers.",
         "His hands were trembling so badly at lunch that I had to cut his food for him."),
        ("I never said this but I've been sending money to my brother every month since he "
         "lost his job, and my savings are basically gone.",
         "Maya supports her unemployed brother financially every month, which has drained "
         "her savings.",
         "I had to say no to the beach trip with the girls, I just can't justify it right now."),
        ("Honestly the reason I stopped driving is the accident two winters ago. I still "
         "freeze up on icy roads.",
         "Maya stopped driving after a car accident on an icy road two winters ago and is "
         "still anxious about it.",
         "It's supposed to snow tomorrow and my stomach is already in knots about the "
         "commute."),
        ("Nobody knows this, but I've been seeing a therapist every week since the breakup "
         "with Jonas.",
         "Maya has been seeing a therapist weekly since her breakup with Jonas.",
         "I finally said the hard thing out loud in that little office with the plants "
         "today."),
        ("I'm kind of ashamed of it but I failed the bar exam the first time, my parents "
         "still think I passed on the first try.",
         "Maya failed the bar exam on her first attempt and has hidden it from her parents.",
         "Mom bragged to her friends again about how I breezed through everything."),
        ("Since I was a kid I've been terrified of deep water, I nearly drowned at a lake "
         "when I was seven.",
         "Maya is afraid of deep water since nearly drowning in a lake at age seven.",
         "The team offsite is a kayaking day and I'm already trying to think of an excuse."),
    ]),
    ("Daniel", [
        ("I don't usually talk about it but I've been sober for fourteen months now, it's "
         "still a daily thing.",
         "Daniel is a recovering alcoholic, sober for fourteen months.",
         "My cousin's wedding has an open bar all night and I'm not sure I should go."),
        ("My wife and I have been trying for a baby for two years, we started IVF in the "
         "spring.",
         "Daniel and his wife have struggled with infertility for two years and began IVF.",
         "Another negative test this morning. She cried in the bathroom and I didn't know "
         "what to say."),
        ("I got passed over for the promotion again and honestly I've started quietly "
         "interviewing elsewhere.",
         "Daniel was passed over for promotion and is secretly looking for another job.",
         "My manager asked why I keep taking long lunches on Tuesdays, I almost panicked."),
        ("My mom has early dementia, she called me by my uncle's name last week.",
         "Daniel's mother has early-stage dementia.",
         "She asked me three times during the call whether I had eaten."),
        ("I have a really bad relationship with my father, we haven't spoken since he left "
         "when I was fifteen.",
         "Daniel is estranged from his father, who left the family when Daniel was fifteen.",
         "Got a friend request from a man with my last name living in Ohio and I just "
         "stared at it."),
        ("I've got tinnitus from years of playing drums in a band, the ringing is worst at "
         "night.",
         "Daniel has tinnitus from years of drumming; it is worst at night.",
         "I can't fall asleep without the fan on anymore, silence is the loudest thing."),
    ]),
    ("Lina", [
        ("I've had an eating disorder since high school, it's been mostly quiet but it "
         "flares when I'm stressed.",
         "Lina has had an eating disorder since high school that flares up under stress.",
         "Finals are next week and I've noticed I keep skipping meals without meaning to."),
        ("My girlfriend and I are together but my parents still think she's just my "
         "roommate.",
         "Lina's parents believe her girlfriend is only her roommate.",
         "My parents are visiting next weekend and we have to figure out the bedroom "
         "situation."),
        ("I'm on a student visa and if I don't find a job within 90 days after graduation I "
         "have to leave the country.",
         "Lina is on a student visa and must find work within 90 days of graduating or "
         "leave the country.",
         "Every rejection email now feels like a countdown clock ticking."),
        ("I was bullied really badly in middle school because of my stutter.",
         "Lina has a stutter and was badly bullied for it in middle school.",
         "I have to present in front of the whole department on Monday and I keep "
         "rehearsing the first word."),
        ("My grandmother raised me, she's the one person I'd do anything for. She's 91 now.",
         "Lina was raised by her grandmother, who is 91 and very dear to her.",
         "The hospital called at 3am and I booked the first flight home."),
        ("I secretly write poetry, I've never shown anyone, not even my girlfriend.",
         "Lina writes poetry privately and has never shown it to anyone.",
         "A small magazine accepted something I sent under a fake name and I'm shaking."),
    ]),
    ("Tom", [
        ("I'm deep in credit card debt, like 30k, my partner doesn't know.",
         "Tom has about $30,000 of credit card debt that he hides from his partner.",
         "She wants to open a joint account so we can save for a house together."),
        ("I was diagnosed with type 1 diabetes as a kid, I have to carry insulin everywhere.",
         "Tom has had type 1 diabetes since childhood and carries insulin.",
         "Airport security took my little cooler bag apart and I nearly missed the flight."),
        ("My best friend from college died of an overdose last year and I still haven't "
         "deleted his number.",
         "Tom's best friend from college died of an overdose last year; Tom still grieves.",
         "His birthday is coming up and the group chat is strangely quiet."),
        ("I hate my job at the bank, I want to become a carpenter but my dad would be "
         "crushed.",
         "Tom dislikes his banking job and dreams of becoming a carpenter, but fears "
         "disappointing his father.",
         "Spent the whole Saturday in the garage building a bookshelf and didn't check my "
         "phone once."),
        ("I'm adopted and I found my birth mother's name last month but I haven't "
         "contacted her.",
         "Tom is adopted and recently learned his birth mother's name but has not reached "
         "out.",
         "I drafted a letter to a woman in Portland and deleted it four times."),
        ("I've got a gambling problem, I lost a lot on sports betting apps last year and "
         "deleted them.",
         "Tom struggled with gambling on sports betting apps and deleted them.",
         "The playoffs start tonight and my thumb keeps hovering over the app store."),
    ]),
    ("Sofia", [
        ("I had a miscarriage in January, we hadn't told anyone we were pregnant.",
         "Sofia had a miscarriage in January before telling anyone about the pregnancy.",
         "My sister announced she's expecting at dinner and I had to go outside for a "
         "minute."),
        ("My husband lost his job and he still leaves every morning like he's going to the "
         "office, I'm the only one who knows.",
         "Sofia's husband lost his job and hides it by pretending to go to work; only Sofia "
         "knows.",
         "His mother asked him about the big project at dinner and he just kept smiling."),
        ("I have endometriosis, some months I can barely get out of bed for three days.",
         "Sofia has endometriosis that leaves her bedridden for days some months.",
         "Called in sick again, hot water bottle and curled up since morning."),
        ("I grew up really poor, we lived in our car for a few months when I was ten.",
         "Sofia grew up poor and lived in a car for a few months at age ten.",
         "I always keep the pantry overstocked, my husband teases me but I can't stop."),
        ("My ex was controlling, he used to check my phone, it took me years to leave.",
         "Sofia was in a controlling relationship with an ex who checked her phone.",
         "My new boss asked for my location sharing for the field visits and my chest went "
         "tight."),
        ("I'm learning Portuguese in secret to surprise my grandmother in Brazil.",
         "Sofia is secretly learning Portuguese to surprise her grandmother in Brazil.",
         "Booked the tickets to Recife for Christmas, I hope I can manage a whole "
         "conversation."),
    ]),
    ("Ken", [
        ("I was diagnosed with ADHD at 35, it explained so much about my school years.",
         "Ken was diagnosed with ADHD at age 35.",
         "I left the stove on again and found four half-finished to-do lists on my desk."),
        ("My marriage is basically over, we sleep in separate rooms and are waiting until "
         "the kids finish school.",
         "Ken's marriage has effectively ended; he and his wife sleep apart and plan to "
         "separate when the kids finish school.",
         "My daughter asked why the guest room bed is always unmade."),
        ("My son has autism and the school keeps calling me in for meetings.",
         "Ken's son is autistic and the school often calls Ken in for meetings.",
         "He had a meltdown at the supermarket because they moved the cereal aisle."),
        ("I quit smoking three months ago and it's the hardest thing I've ever done.",
         "Ken quit smoking three months ago and is struggling to stay off cigarettes.",
         "Someone lit up outside the office and I stood downwind on purpose."),
        ("My brother and I inherited the family restaurant and we fight about it "
         "constantly.",
         "Ken co-owns the family restaurant he inherited with his brother, and they often "
         "argue about it.",
         "He changed the menu again without asking me, I found out from a customer."),
        ("I'm terrified of hospitals since my mom died in one when I was a teenager.",
         "Ken is afraid of hospitals since his mother died in one when he was a teenager.",
         "The doctor wants me to come in for a scan and I keep postponing the appointment."),
    ]),
]

#: everyday turns (some on the remarks' surface topics: dinner, work, flights, sleep,
#: family), each with the mundane observation an extractor might write, or None
EVERYDAY: list[tuple[str, str | None]] = [
    ("We made dumplings for dinner tonight, it took forever but they were great.",
     "{name} made dumplings for dinner."),
    ("Work was fine, lots of meetings, nothing exciting.", None),
    ("I'm watching a cooking show, I could watch these for hours.",
     "{name} enjoys watching cooking shows."),
    ("The weather has been so grey lately, I miss the sun.", None),
    ("I started running in the mornings, just 3k but it feels good.",
     "{name} started running 3k in the mornings."),
    ("My phone screen cracked again, third time this year.", None),
    ("Do you have any podcast recommendations? I need something for the commute.", None),
    ("I finally cleaned out my closet and gave away two bags of clothes.",
     "{name} cleaned out the closet and donated clothes."),
    ("Had coffee with an old friend from school, we talked for three hours.",
     "{name} had a long coffee with an old school friend."),
    ("I'm so tired today, I stayed up too late reading.", None),
    ("My flight got delayed by two hours, I'm stuck at the gate eating crisps.",
     "{name} had a delayed flight."),
    ("We're thinking about getting a dog, maybe a beagle.",
     "{name} is considering getting a beagle."),
    ("I tried a new ramen place downtown, the broth was amazing.",
     "{name} likes the new ramen place downtown."),
    ("The neighbours are renovating and the drilling starts at seven every day.", None),
    ("I signed up for a pottery class on Wednesdays.",
     "{name} takes a pottery class on Wednesdays."),
    ("My family group chat is just my aunt sending memes all day.", None),
    ("I binged the whole season of that detective show in one weekend.",
     "{name} binge-watched a detective series."),
    ("I'm trying to drink more water, I set reminders on my phone.", None),
    ("Went hiking on Sunday, the view from the top was worth it.",
     "{name} went hiking on Sunday."),
    ("I have to renew my passport, the appointment system is a nightmare.",
     "{name} needs to renew a passport."),
    ("My sister sent me a photo of her new apartment, it's tiny but cute.", None),
    ("I baked banana bread with the bananas nobody was eating.",
     "{name} baked banana bread."),
    ("The office moved the printer again and nobody knows where it went.", None),
    ("I think I'm getting a cold, my throat is scratchy.", None),
    ("We played board games at a friend's place until midnight.",
     "{name} enjoys board game nights with friends."),
    ("I bought new headphones, the noise cancelling is unreal.",
     "{name} bought noise-cancelling headphones."),
    ("Traffic was terrible this morning, I was twenty minutes late.", None),
    ("I'm planning a small birthday dinner for my friend next week.",
     "{name} is planning a birthday dinner for a friend."),
    ("I reorganised my bookshelf by colour, it looks so nice.", None),
    ("I can't decide what to cook this week, I'm bored of everything.", None),
    ("My manager liked the report I sent, so that was nice.",
     "{name}'s manager praised a report."),
    ("I've been listening to a lot of jazz lately while working.",
     "{name} listens to jazz while working."),
    ("The gym was packed tonight, I gave up and went home.", None),
    ("I watered the plants and one of them finally has a new leaf.",
     "{name} keeps houseplants."),
    ("My parents called to ask about my weekend plans.", None),
    ("I'm thinking of learning to play the guitar this year.",
     "{name} wants to learn guitar."),
    ("The train was cancelled so I worked from home.", None),
    ("I tried yoga for the first time, I'm so not flexible.",
     "{name} tried yoga for the first time."),
    ("We ordered pizza and watched a movie, a lazy night.", None),
    ("I got a parking ticket outside the dentist, so annoying.", None),
]

#: what a long, chatty turn wraps a confidence in (the raw turn is diluted; a memory is not)
WRAP = [
    "long day at work today. {text} anyway, what are you up to tonight?",
    "{text} sorry, that was heavy. the rain finally stopped here at least.",
    "I made pasta again, lol. {text}",
    "{text}",
    "so the meeting ran late and I missed the bus. {text} ok enough about me.",
    "{text} I don't know why I'm telling you this at midnight.",
]
#: the heavy variant's everyday talk: a time, something done, a remark after
_WHEN = ["This morning", "Last night", "After work", "On Saturday", "Yesterday", "Today",
         "At lunch", "Earlier", "On the way home", "Over the weekend", "Before dinner",
         "Around noon"]
_DID = ["I tried a new recipe with lentils", "I walked to the park", "I fixed the leaking tap",
        "I called my cousin", "I finished a puzzle", "I repotted the basil",
        "I went to the farmers market", "I cleaned the fridge", "I watched a documentary "
        "about whales", "I answered a pile of emails", "I went for a swim at the gym",
        "I bought new running shoes", "I tidied the garage", "I tried a new coffee shop",
        "I read half a novel", "I helped a neighbour carry boxes", "I did the laundry",
        "I sorted old photos", "I cooked a big pot of soup", "I went to a friend's gig",
        "I practised some chords", "I took the long way home on the bike",
        "I ordered a new desk lamp", "I met a colleague for a drink",
        "I rearranged the living room", "I made pancakes", "I went to the library",
        "I wrote a shopping list", "I watched the football", "I baked cookies"]
_AFTER = ["and it was nice.", "and then I napped.", "which took longer than expected.",
          "and now I'm tired.", "so that's done.", "and I'm pretty happy about it.",
          "but it started raining.", "and I ate too much.", "and I lost track of time.",
          "and the cat watched me the whole time.", "and the traffic was fine.",
          "and I listened to a podcast while at it."]


def everyday_heavy(name: str, rng: random.Random, n: int) -> list[tuple[str, str | None]]:
    """``n`` distinct everyday turns, a third of them with a mundane observation."""
    combos = [(w, d, a) for w in _WHEN for d in _DID for a in _AFTER]
    rng.shuffle(combos)
    out: list[tuple[str, str | None]] = []
    for i, (w, d, a) in enumerate(combos[:n]):
        obs = None
        if i % 3 == 0:
            obs = "{name} " + d.removeprefix("I ").replace("my ", "their ") + "."
        out.append((f"{w} {d} {a}", obs))
    return out


REPLIES = ["I'm listening, tell me more.", "That sounds like a lot.", "Thanks for telling me.",
           "How did that feel?", "I see.", "Go on."]


def _id(*parts: object) -> str:
    return str(uuid.uuid5(NS, "/".join(str(p) for p in parts)))


def build(*, heavy: bool = False) -> dict[str, Any]:
    sessions_n, per_session, early = (30, 10, 8) if heavy else (SESSIONS, TURNS_PER_SESSION, 5)
    gap = 7 if heavy else GAP_DAYS
    rng = random.Random(31)
    users: list[dict[str, Any]] = []
    questions: list[dict[str, Any]] = []
    for u, (name, secrets) in enumerate(USERS):
        everyday = EVERYDAY[:]
        rng.shuffle(everyday)
        if heavy:
            everyday = everyday_heavy(name, rng, sessions_n * per_session) + everyday
        # the confidences fall in sessions 1-5 (the first months), at distinct random slots
        slot: dict[tuple[int, int], int] = {}
        for s in range(early):
            mine = [i for i in range(len(secrets)) if i * early // len(secrets) == s]
            for i, t in zip(mine, rng.sample(range(per_session), len(mine)), strict=True):
                slot[(s, t)] = i
        sessions = []
        nxt = 0
        for s in range(sessions_n):
            at = START + timedelta(days=gap * s + u, hours=rng.randrange(4))
            turns: list[dict[str, Any]] = []
            observations: list[dict[str, Any]] = []
            for t in range(per_session):
                tid = f"{name}:S{s + 1}:T{t + 1}"
                secret = slot.get((s, t))
                if secret is not None:
                    text, fact, remark = secrets[secret]
                    content = WRAP[(u + secret) % len(WRAP)].format(text=text)
                    observations.append({"text": fact, "turns": [tid]})
                    questions.append({
                        "id": f"{name}-{secret + 1}", "user": _id("user", name),
                        "type": "single-hop", "question": remark, "evidence": [fact],
                        "answer": fact, "evidence_turns": [tid]})
                else:
                    content, obs = everyday[nxt % len(everyday)]
                    nxt += 1
                    if obs:
                        observations.append({"text": obs.format(name=name), "turns": [tid]})
                when = at + timedelta(minutes=4 * t)
                turns.append({"role": "user", "content": content, "at": when.isoformat(),
                              "id": tid})
                turns.append({"role": "assistant", "content": REPLIES[(s + t) % len(REPLIES)],
                              "at": (when + timedelta(minutes=1)).isoformat()})
            sessions.append({"id": _id("session", name, s), "turns": turns,
                             "observations": observations})
        users.append({"id": _id("user", name), "name": name, "language": "en",
                      "sessions": sessions})
    missing = {f"{n}-{i + 1}" for n, s in USERS for i in range(len(s))} - \
        {q["id"] for q in questions}
    if missing:
        raise SystemExit(f"confidences not placed: {sorted(missing)}")
    name = "eros-implicit-heavy-heldout-v1" if heavy else "eros-implicit-heldout-v1"
    return {"name": name, "users": users, "questions": questions}


if __name__ == "__main__":
    for path, heavy in ((OUT, False), (HEAVY_OUT, True)):
        path.write_text(json.dumps(build(heavy=heavy), ensure_ascii=False, indent=1) + "\n",
                        encoding="utf-8")
        print(f"wrote {path}")
