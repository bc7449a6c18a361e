"""The subrequest splitter: independent commands joined by connectors become separate subrequests.

XA4.1 多指令: "可独立拆分路由时先对子请求分别标注，再保留聚合标签". A chain whose later part depends
on the earlier one (查天气再决定要不要开窗) is not independent, so it is never split, and neither is an
automation (上车时打开空调): its condition and action form one request.
"""

from __future__ import annotations

from dataclasses import dataclass

from fastslow.features.lexicon import load_lexicon
from fastslow.features.split import join_actionless, pieces_between


@dataclass(frozen=True)
class SplitLexicon:
    """The word sets the splitter needs, frozen at training time from the lexicon files."""

    boundaries: frozenset  # connectors and pauses that may separate independent requests
    dependency: frozenset  # markers of a dependent chain: never split
    triggers: frozenset  # condition markers: an automation is one request
    trigger_suffixes: tuple  # 时 / 时候 glued to a token by jieba (上车时)
    actions: frozenset  # action verbs: a piece must hold one to stand alone

    @classmethod
    def from_lexicons(cls) -> "SplitLexicon":
        connectors = load_lexicon("connectors")
        by_category = {c: set() for c in connectors.categories}
        for term, cols in {**connectors.words, **connectors.chars}.items():
            for col in cols:
                by_category[connectors.categories[col]].add(term)
        actions = load_lexicon("actions")
        request = actions.categories.index("request") if "request" in actions.categories else -1
        triggers = load_lexicon("triggers")
        return cls(
            boundaries=frozenset(by_category.get("sequence", set()) | by_category.get("pause", set())),
            dependency=frozenset(by_category.get("dependency", set())),
            triggers=frozenset(t for t, cols in triggers.words.items()
                               if {triggers.categories[c] for c in cols} & {"trigger", "conditional", "periodic"}),
            trigger_suffixes=tuple(sorted(t for t in triggers.terms() if t in ("时", "时候", "的时候"))),
            actions=frozenset(t for t, cols in {**actions.words, **actions.chars}.items() if cols != (request,)),
        )


def split_subrequests(tokens: tuple[str, ...], lexicon: SplitLexicon) -> list[tuple[int, int]]:
    """Token spans ``(start, end)`` of the independent subrequests of one query.

    Boundaries are sequence connectors (然后, 再, 并且, 顺便) and pauses (，；、); the connector itself
    belongs to no span. A piece without an action verb (太冷了，调一下空调) joins the next piece, the last
    one joins the previous, so a feeling or a scene is never routed apart from its request.
    """
    whole = [(0, len(tokens))]
    if lexicon.boundaries.isdisjoint(tokens):
        return whole
    if any(t in lexicon.dependency or t in lexicon.triggers or t.endswith(lexicon.trigger_suffixes)
           for t in tokens):
        return whole
    pieces = pieces_between(len(tokens), ((i, i + 1) for i, t in enumerate(tokens) if t in lexicon.boundaries))
    if len(pieces) < 2:
        return whole
    merged = join_actionless(pieces, [any(t in lexicon.actions for t in tokens[a:b]) for a, b in pieces])
    return merged if len(merged) >= 2 else whole
