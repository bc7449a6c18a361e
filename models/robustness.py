"""Robustness to spoken variation: does a query keep its label when it is said the way people say it?

Each row is scored, then each of its spoken variants (``features.spoken``: fillers, wake words, polite
tails, stutters, dropped punctuation, digits ↔ Chinese numerals, ASR homophones, ASR-like sound swaps), and a variant *stays
put* when its label equals the label the model gave the row itself (no gold label needed: the spec's
label of a query does not change when someone says 嗯 before it). Used by ``fastslow robustness`` and
by ``train.py`` on the dev set.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from fastslow.features.spoken import VARIANT_KINDS, spoken_variants

#: the share of labels kept that the toolkit aims at: overall, and per variant kind where it has its own
ROBUSTNESS_TARGET = 0.995
KIND_TARGETS = {"asr": 0.97}


@dataclass
class Robustness:
    """Per variant kind: variants scored and variants whose label stayed put; the flips themselves."""

    rows: int
    total: dict[str, int]
    stayed: dict[str, int]
    flips: list[dict] = field(default_factory=list)

    @property
    def overall(self) -> float:
        n = sum(self.total.values())
        return sum(self.stayed.values()) / n if n else 1.0

    def share(self, kind: str) -> float:
        return self.stayed[kind] / self.total[kind] if self.total.get(kind) else 1.0

    def metrics(self, prefix: str = "") -> dict[str, float]:
        """``{prefix}_robustness`` and ``{prefix}_robustness_{kind}`` for MLflow (no prefix: ``robustness``...)."""
        name = f"{prefix}_robustness" if prefix else "robustness"
        out = {name: round(self.overall, 4)}
        out.update({f"{name}_{kind}": round(self.share(kind), 4) for kind in self.total})
        return out

    def table(self, name: str = "") -> str:
        lines = [f"{'spoken variant' + (' (' + name + ')' if name else ''):<24} {'variants':>9} {'label kept':>11}"]
        for kind in self.total:
            target = KIND_TARGETS.get(kind)
            lines.append(f"{kind:<24} {self.total[kind]:>9} {self.share(kind):>11.3f}"
                         + ("" if target is None or self.share(kind) >= target else f"   (target ≥ {target})"))
        lines.append(f"{'overall':<24} {sum(self.total.values()):>9} {self.overall:>11.3f}"
                     + ("" if self.overall >= ROBUSTNESS_TARGET else f"   (target ≥ {ROBUSTNESS_TARGET})"))
        return "\n".join(lines)


def robustness(model, rows: list[dict], seed: int = 0, kinds=VARIANT_KINDS, progress=None,
               chunk: int = 500) -> Robustness:
    """Score ``rows`` (input dicts: query, optional context and endpoint) and their spoken variants with
    ``model`` (a ``FastslowModel``; its automation parser is not needed and not run). ``progress``:
    called as ``progress(scored, total)`` after each ``chunk`` of rows and variants when given."""
    router_only = dataclasses.replace(model, automation=None)
    items = [{"query": r["query"], "context": r.get("context") or [], "endpoint": r.get("endpoint")} for r in rows]
    variants = [spoken_variants(item["query"], seed, kinds) for item in items]
    batch = list(items)
    for item, found in zip(items, variants):
        batch.extend({**item, "query": text} for _, text in found)
    if progress is None:
        records = router_only.score(batch)
    else:
        records = []
        for start in range(0, len(batch), chunk):
            records += router_only.score(batch[start:start + chunk])
            progress(len(records), len(batch))
    total = {kind: 0 for kind in kinds}
    stayed = {kind: 0 for kind in kinds}
    flips = []
    position = len(items)
    for item, record, found in zip(items, records, variants):
        for kind, text in found:
            variant = records[position]
            position += 1
            if "error" in record or "error" in variant:
                continue
            total[kind] += 1
            if variant["label"] == record["label"]:
                stayed[kind] += 1
            else:
                flips.append({"query": item["query"], "kind": kind, "variant": text, "label": record["label"],
                              "variant_label": variant["label"],
                              "variant_reason_code": variant["primary_reason_code"]})
    return Robustness(rows=len(items), total=total, stayed=stayed, flips=flips)
