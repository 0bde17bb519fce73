"""Special-category labels for the offline extractor: cue words in English and
Chinese. HEURISTIC, like the extractor itself: a clause that names a condition, a crisis, an
orientation, a faith or party, an ethnicity or biometric data gets that label; when several
fire, the most sensitive wins (``SENSITIVITY_ORDER``). A live model labels by meaning."""

from __future__ import annotations

import re

from eros.core.sensitivity import Sensitivity, most_sensitive


def _en(*words: str) -> re.Pattern[str]:
    return re.compile(r"\b(?:" + "|".join(words) + r")\b", re.IGNORECASE)


def _zh(*words: str) -> re.Pattern[str]:
    return re.compile("|".join(words))


_CUES: dict[Sensitivity, tuple[re.Pattern[str], re.Pattern[str]]] = {
    "crisis": (
        _en(r"suicid\w*", r"kill(?:ing)? myself", r"end(?:ing)? my life", r"want(?:ed)? to die",
            r"self[- ]harm\w*", r"hurt(?:ing)? myself", r"cut(?:ting)? myself",
            r"abus(?:e|ed|es|ive)", r"assault(?:ed)?", r"raped?", r"(?:hits|beats|hit|beat) me",
            r"overdos\w*"),
        _zh("自杀", "轻生", "想死", "不想活", "自残", "割腕", "家暴", "虐待", "性侵", "强奸",
            "打我")),
    "health": (
        _en(r"insomnia", r"can(?:'|no)?t sleep", r"cannot sleep", r"blood pressure",
            r"diabet\w*", r"cancer", r"tumou?r", r"depress(?:ion|ed)", r"anxiety",
            r"panic attacks?", r"therap(?:y|ist)", r"medication", r"antidepressants?",
            r"diagnos(?:ed|is)", r"hospital\w*", r"surgery", r"asthma", r"migraines?",
            r"pregnan(?:t|cy)", r"adhd", r"bipolar", r"allerg(?:y|ic|ies)", r"chronic",
            r"disease", r"illness", r"my doctor", r"eating disorder", r"ptsd", r"hiv"),
        _zh("失眠", "血压", "糖尿病", "癌", "肿瘤", "抑郁", "焦虑", "惊恐", "心理医生",
            "心理咨询", "吃药", "药物", "确诊", "住院", "手术", "哮喘", "偏头痛", "怀孕",
            "过敏", "生病", "疾病", "看病", "医院")),
    "sexuality": (
        _en(r"gay", r"lesbian", r"bisexual", r"queer", r"transgender", r"asexual",
            r"sexual orientation", r"came out", r"coming out", r"my sex life"),
        _zh("同性恋", "双性恋", "出柜", "跨性别", "性取向", "男同", "女同", "无性恋")),
    "biometric": (
        _en(r"dna", r"genetic\w*", r"genome", r"23andme", r"fingerprints?", r"face id",
            r"iris scan", r"gene test\w*"),
        _zh("基因", "指纹", "人脸识别", "虹膜")),
    "ethnicity": (
        _en(r"ethnicity", r"ethnic", r"my race", r"latin[oa]", r"hispanic", r"indigenous",
            r"asian american", r"african american"),
        _zh("民族", "少数民族", "汉族", "回族", "藏族", "维吾尔", "种族")),
    "beliefs": (
        _en(r"religio(?:n|us)", r"christian", r"muslim", r"buddhis[tm]", r"hindu", r"jewish",
            r"atheist", r"church", r"mosque", r"synagogue", r"pray(?:ed|ing|s)?", r"bible",
            r"quran", r"voted? for", r"democrat\w*", r"republican", r"political party",
            r"trade union", r"labou?r union", r"union member"),
        _zh("信教", "宗教", "基督", "佛教", "穆斯林", "伊斯兰", "无神论", "教会", "做礼拜",
            "祈祷", "党员", "工会", "投票给")),
}


def sensitivity_label(clause: str) -> Sensitivity | None:
    """The most sensitive label whose cue words occur in ``clause``, or None."""
    return most_sensitive(label for label, (en, zh) in _CUES.items()
                          if en.search(clause) or zh.search(clause))
