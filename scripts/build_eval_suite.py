#!/usr/bin/env python3
"""Write eros/data/eval_suite.json, the suite `eros eval` ships (docs/eval.md).

Ten users (five English, five Chinese) × ten sessions nine days apart: a move, a job change, a
breakup, a sister's news, trivia (a cat, a drink, a hated food) next to life-defining facts (a
mother's wish, a loss), one fact repeated across sessions. Questions name the statements that
answer them (``evidence``) and, for knowledge updates, the outdated ones (``stale``).
Deterministic: re-running writes the same file. Run: python scripts/build_eval_suite.py
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

NS = uuid.UUID("5b0c9e36-2f1d-4a57-9d7e-19e1a0e5ee19")
OUT = Path(__file__).resolve().parent.parent / "eros" / "data" / "eval_suite.json"
START = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)

EN = [
    dict(name="Emma", city_old="Shanghai", city_new="Tokyo", job_old="an English teacher",
         job_new="a translator", pet="Mochi", drink="mocha", hated="cilantro", partner="Tom",
         sib="Ana", sib_city="Berlin", singer="Phoebe Bridgers"),
    dict(name="Liam", city_old="Chicago", city_new="Denver", job_old="a nurse",
         job_new="a paramedic", pet="Biscuit", drink="green tea", hated="olives",
         partner="Sara", sib="Kate", sib_city="Dublin", singer="Kendrick Lamar"),
    dict(name="Olivia", city_old="Toronto", city_new="Vancouver", job_old="a software engineer",
         job_new="a product manager", pet="Pepper", drink="matcha", hated="mushrooms",
         partner="Jake", sib="Mia", sib_city="Lisbon", singer="Adele"),
    dict(name="Noah", city_old="London", city_new="Manchester", job_old="an accountant",
         job_new="a baker", pet="Luna", drink="black coffee", hated="pickles", partner="Ella",
         sib="Grace", sib_city="Sydney", singer="Coldplay"),
    dict(name="Ava", city_old="Boston", city_new="Seattle", job_old="a graphic designer",
         job_new="an architect", pet="Oscar", drink="chai", hated="blue cheese",
         partner="Ryan", sib="Zoe", sib_city="Madrid", singer="Taylor Swift"),
]
ZH = [
    dict(name="林晓", city_old="成都", city_new="杭州", job_old="一家会计师事务所",
         job_new="一家游戏公司", pet="团子", drink="拿铁", hated="香菜", partner="阿杰",
         sib="林静", sib_city="广州", singer="周杰伦"),
    dict(name="张伟", city_old="深圳", city_new="长沙", job_old="一家创业公司",
         job_new="一家银行", pet="可乐", drink="奶茶", hated="苦瓜", partner="小雨",
         sib="张敏", sib_city="北京", singer="陈奕迅"),
    dict(name="王芳", city_old="北京", city_new="上海", job_old="一家医院",
         job_new="一所大学", pet="布丁", drink="乌龙茶", hated="榴莲", partner="子豪",
         sib="王丽", sib_city="南京", singer="王菲"),
    dict(name="陈晨", city_old="武汉", city_new="苏州", job_old="一家设计公司",
         job_new="一家广告公司", pet="年糕", drink="美式咖啡", hated="胡萝卜", partner="思远",
         sib="陈露", sib_city="厦门", singer="林俊杰"),
    dict(name="刘洋", city_old="西安", city_new="重庆", job_old="一家物流公司",
         job_new="一家电商公司", pet="豆豆", drink="豆浆", hated="芹菜", partner="佳佳",
         sib="刘畅", sib_city="青岛", singer="五月天"),
]

EN_SESSIONS = [
    ["Hi! My name is {name}.", "I live in {city_old}.", "I work as {job_old}."],
    ["I have a cat named {pet}.", "I love {drink}, I have one every morning.",
     "My boyfriend {partner} is a chef."],
    ["My sister {sib} is a doctor.", "I feel so tired this week."],
    ["I hate {hated}.", "My mother wants me to get married soon."],
    ["I passed my driving test yesterday!", "I live in {city_old}, the rent here is crazy."],
    ["My sister {sib} moved to {sib_city}.", "I am so excited about the summer."],
    ["I moved to {city_new} last week.", "I feel a bit lonely here."],
    ["I broke up with {partner} last weekend.", "My dad passed away when I was ten."],
    ["I work as {job_new} now.", "I quit my old job last month."],
    ["I live in {city_new} now and it feels like home.",
     "My favorite singer is {singer}."],
]
ZH_SESSIONS = [
    ["我叫{name}。", "我住在{city_old}。", "我在{job_old}工作。"],
    ["我最喜欢我的猫{pet}。", "我爱喝{drink}，每天早上一杯。", "我男朋友{partner}是厨师。"],
    ["我姐姐{sib}是医生。", "这周好累。"],
    ["我讨厌吃{hated}。", "我妈妈想让我早点结婚。"],
    ["我昨天通过了驾照考试！", "我住在{city_old}，房租太贵了。"],
    ["我姐姐{sib}搬到了{sib_city}。", "我好开心。"],
    ["我上周搬到了{city_new}。", "我在这里有点孤独。"],
    ["我和{partner}上周末分手了。", "我爸爸在我十岁的时候去世了。"],
    ["我现在在{job_new}上班。", "我上个月辞职了。"],
    ["我现在住在{city_new}，感觉像家一样。", "我最喜欢的歌手是{singer}。"],
]
EN_REPLY, ZH_REPLY = "I'm listening, tell me more.", "我在听，多说一点吧。"

# (id, type, question, evidence, stale, answer) — evidence/stale are the statements as memory
EN_QUESTIONS = [
    ("home", "knowledge-update", "Where do you live these days?",
     ["Lives in {city_new}"], ["Lives in {city_old}"], "{city_new}"),
    ("job", "knowledge-update", "What do you do for work now?",
     ["Works as {job_new}"], ["Works as {job_old}"], "{job_new}"),
    ("partner", "knowledge-update", "How are things with your boyfriend?",
     ["Broke up with {partner}"], ["User's boyfriend {partner} is a chef"],
     "They broke up"),
    ("pet", "single-hop", "What is your cat called?", ["Has a cat named {pet}"], [], "{pet}"),
    ("drink", "single-hop", "What do you like to drink in the morning?",
     ["Loves {drink}"], [], "{drink}"),
    ("mother", "single-hop", "What does your mother want for you?",
     ["User's mother wants them to get married soon"], [], "To get married soon"),
    ("dad", "single-hop", "Tell me about your father.",
     ["User's dad passed away when they were ten"], [], "He passed away when she was ten"),
    ("sister", "multi-hop", "What does your sister do and where does she live?",
     ["User's sister {sib} is a doctor", "User's sister {sib} moved to {sib_city}"], [],
     "A doctor in {sib_city}"),
    ("driving", "temporal", "When did you pass your driving test?",
     ["Passed their driving test yesterday"], [], "{driving_date}"),
    ("moved", "temporal", "When did you move to {city_new}?",
     ["Moved to {city_new} last week"], [], "{moved_date}"),
    ("dog", "adversarial", "What is your dog's name?", [], [], "No dog was mentioned"),
    ("brother", "adversarial", "Where does your brother work?", [], [],
     "No brother was mentioned"),
]
ZH_QUESTIONS = [
    ("home", "knowledge-update", "你现在住在哪里？", ["住在{city_new}"], ["住在{city_old}"],
     "{city_new}"),
    ("job", "knowledge-update", "你现在在哪里上班？", ["在{job_new}上班"], ["在{job_old}工作"],
     "{job_new}"),
    ("partner", "knowledge-update", "你和男朋友最近怎么样？", ["和{partner}分手了"],
     ["男朋友{partner}是厨师"], "分手了"),
    ("pet", "single-hop", "你的猫叫什么？", ["最喜欢我的猫{pet}"], [], "{pet}"),
    ("drink", "single-hop", "你早上喜欢喝什么？", ["爱喝{drink}"], [], "{drink}"),
    ("mother", "single-hop", "你妈妈希望你怎样？", ["妈妈想让我早点结婚"], [], "早点结婚"),
    ("dad", "single-hop", "说说你爸爸吧。", ["爸爸在我十岁的时候去世了"], [], "十岁时去世了"),
    ("sister", "multi-hop", "你姐姐是做什么的，住在哪里？",
     ["姐姐{sib}是医生", "姐姐{sib}搬到了{sib_city}"], [], "{sib_city}的医生"),
    ("driving", "temporal", "你什么时候通过驾照考试的？", ["昨天通过了驾照考试"], [],
     "{driving_date}"),
    ("moved", "temporal", "你什么时候搬到{city_new}的？", ["上周搬到了{city_new}"], [],
     "{moved_date}"),
    ("dog", "adversarial", "你的狗叫什么名字？", [], [], "没有提到狗"),
    ("brother", "adversarial", "你哥哥在哪里工作？", [], [], "没有提到哥哥"),
]


def _session_time(user_no: int, session_no: int) -> datetime:
    return START + timedelta(days=9 * session_no, hours=user_no)


def build() -> dict[str, Any]:
    users: list[dict[str, Any]] = []
    questions: list[dict[str, Any]] = []
    for user_no, (lang, spec) in enumerate([("en", s) for s in EN] + [("zh", s) for s in ZH]):
        user_id = str(uuid.uuid5(NS, f"user-{user_no}"))
        fields = dict(spec, driving_date=_session_time(user_no, 4).date().isoformat(),
                      moved_date=(_session_time(user_no, 6) - timedelta(days=7)).date()
                      .isoformat())
        templates = EN_SESSIONS if lang == "en" else ZH_SESSIONS
        reply = EN_REPLY if lang == "en" else ZH_REPLY
        sessions = []
        for session_no, lines in enumerate(templates):
            at = _session_time(user_no, session_no)
            turns = []
            for i, line in enumerate(lines):
                turns.append({"role": "user", "content": line.format(**fields),
                              "at": (at + timedelta(minutes=2 * i)).isoformat()})
                turns.append({"role": "assistant", "content": reply,
                              "at": (at + timedelta(minutes=2 * i + 1)).isoformat()})
            sessions.append({"id": str(uuid.uuid5(NS, f"session-{user_no}-{session_no}")),
                             "turns": turns})
        users.append({"id": user_id, "name": spec["name"], "language": lang,
                      "sessions": sessions})
        for qid, kind, text, evidence, stale, answer in (EN_QUESTIONS if lang == "en"
                                                         else ZH_QUESTIONS):
            questions.append({
                "id": f"{user_no}-{qid}", "user": user_id, "type": kind,
                "question": text.format(**fields),
                "evidence": [e.format(**fields) for e in evidence],
                "stale": [s.format(**fields) for s in stale],
                "answer": answer.format(**fields)})
    return {"name": "eros-shipped-v1", "users": users, "questions": questions}


if __name__ == "__main__":
    OUT.write_text(json.dumps(build(), ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {OUT}")
