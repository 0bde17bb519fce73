"""``eros eval``'s use cases: replay a suite through the real pipeline into a scratch database
(:mod:`.replay`), ask its questions through recall for every strategy and the raw-turns
baseline (:mod:`.run`), and judge the answers (:mod:`.judges`). docs/eval.md."""
