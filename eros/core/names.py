"""The names and values other systems use to reach eros (contract: never rename), spelled once.

Task names are what the chat product, ``celery call`` and the beat schedule send; the beat
heartbeat key is what ``eros health --beat`` reads.
"""

from __future__ import annotations

from typing import Final, Literal, get_args

CLAIM_TASK: Final = "eros.claim_idle_sessions"
CLASSIFY_TASK: Final = "eros.classify_session"
FIND_CONSOLIDATION_TASK: Final = "eros.find_consolidation_candidates"
CONSOLIDATE_TASK: Final = "eros.consolidate_user"
RECALL_TASK: Final = "eros.recall"
CLUSTER_TASK: Final = "eros.cluster_memories"
FORGET_USER_TASK: Final = "eros.forget_user"
FORGET_MEMORY_TASK: Final = "eros.forget_memory"
FORGET_MESSAGE_TASK: Final = "eros.forget_message"
FORGET_SESSION_TASK: Final = "eros.forget_session"
ALLOW_SENSITIVE_TASK: Final = "eros.allow_sensitive"
RELABEL_TASK: Final = "eros.relabel_sensitivity"
RETENTION_TASK: Final = "eros.apply_retention"
REEMBED_TASK: Final = "eros.reembed_memories"
SCREEN_UNSCREENED_TASK: Final = "eros.screen_unscreened"

#: every value of RECALL_STRATEGY (and of a recall's ``strategy``): the memory rankings and
#: ``fused``
RecallStrategy = Literal["grouped", "decay", "composite", "fused"]
RECALL_STRATEGIES: tuple[RecallStrategy, ...] = ("grouped", "decay", "composite", "fused")
FUSED: RecallStrategy = "fused"
#: every value of a recall's ``scope``: the profile layer, the persona's own, or both
Scope = Literal["profile", "relationship", "both"]
SCOPES: tuple[Scope, ...] = ("profile", "relationship", "both")
DEFAULT_SCOPE: Final[Scope] = "both"
#: every set of labels recall's prompt section is rendered with (RECALL_LABELS, ``--render``)
LabelSet = Literal["zh", "en"]
LABEL_SETS: Final[tuple[LabelSet, ...]] = get_args(LabelSet)
DEFAULT_LABELS: Final[LabelSet] = "zh"
#: every value of RECALL_FUSION_CALIBRATION: how ``fused`` puts memories' and turns' scores
#: on one scale
FusionCalibration = Literal["similarity", "z", "rank", "standing"]

#: Redis key where beat's scheduler records the time of its last loop.
BEAT_HEARTBEAT_KEY: Final = "eros:beat:heartbeat"
