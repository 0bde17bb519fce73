"""The per-user advisory lock that consolidation, forget and the turn backfill share: whoever
changes a user's memories or turns in bulk holds it, so two of them never interleave."""

#: first key of the two-key advisory lock: our namespace, so no other lock user collides.
LOCK_NAMESPACE = "eros.consolidate"
# One 64-bit key (as the cells lock): two 32-bit halves of which one is a user's hash made a
# collision between two users likely enough at scale to park one of them as busy.
#: the user's lock key (bind ``ns`` and ``user_id``): consolidation tries it, forget waits on it.
LOCK_KEY = "hashtextextended(:ns || ':' || CAST(:user_id AS text), 0)"
