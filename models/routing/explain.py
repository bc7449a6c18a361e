"""Why the router chose a label: each active feature's exact share of the decision.

The router is a multinomial logistic regression over a sparse feature vector ``x``; the logit of
reason code ``k`` after the temperature ``T`` is ``(x · w_k + b_k) / T``. So the log-odds of the
chosen code ``p`` against the runner-up ``r`` splits exactly into one term per active feature,
``x_j (w_jp - w_jr) / T``, plus the intercepts' ``(b_p - b_r) / T``: no sampling, no surrogate
model, one sparse row times two weight columns.

The runner-up is the most probable code of another label: the label is what a wrong answer costs
(a slow query answered fast), so the explanation says what pushed the query to its label rather than
to the next one. Features are named for people: ``char "座椅"`` (a character n-gram), ``word "空调"``
(a jieba token), ``devices:car_device "座椅加热"`` (a lexicon category with the words that hit it),
``endpoint:car``, ``ctx:prev_slow``, ``target:sensation&no_target``, ``numbers:len<=8``.
"""

from __future__ import annotations

import numpy as np
from scipy.special import softmax

from fastslow.features.extractors import LexiconFeatures
from fastslow.models.taxonomy import CODE_LABEL

DEFAULT_TOP_K = 10
_QUOTED = {"chars": "char", "words": "word"}


def feature_names(router) -> list[tuple[str, str, object]]:
    """``(block, raw name, transformer)`` of every column of the router's feature vector, in order."""
    union = router.pipeline_.named_steps["features"]
    names = []
    for block, transformer in union.transformer_list:
        names.extend((block, str(name), transformer) for name in transformer.get_feature_names_out())
    return names


def lexicon_terms(lexicon, u, column: int, bank=None) -> list[str]:
    """The words of ``u`` that hit ``column`` (a category) of ``lexicon``: its terms among the
    utterance's tokens, its single characters where they count (``counted_chars`` of the segmenter's
    ``bank`` when the bank matched this lexicon, as ``Lexicon.hits`` reads them), and its gap patterns
    that match."""
    matcher = bank if bank is not None and lexicon.digest in u.hits else lexicon
    chars = matcher.counted_chars(u.tokens)
    terms = [t for t in dict.fromkeys(u.tokens) if column in lexicon.words.get(t, ())]
    terms += sorted(ch for ch in chars & lexicon.char_set if column in lexicon.chars[ch])
    terms += [pattern.pattern for pattern, col in lexicon.gaps if col == column and pattern.search(u.text)]
    return terms


def readable(block: str, name: str, transformer, u, column: int, bank=None) -> str:
    """A column's name for people (see the module doc); ``column`` is its index inside its block."""
    if block in _QUOTED:
        return f'{_QUOTED[block]} "{name}"'
    if ":" not in name:
        name = f"{block}:{name}"
    if isinstance(transformer, LexiconFeatures) and column < len(transformer.lexicon_.categories):
        terms = lexicon_terms(transformer.lexicon_, u, column, bank)
        if terms:
            name += " " + " ".join(f'"{t}"' for t in terms)
    return name


def explain_utterances(router, utterances, top_k: int | None = DEFAULT_TOP_K) -> list[dict]:
    """The explanation of each utterance's route (see the module doc).

    ``margin`` (the chosen code's logit minus the runner-up's, after the temperature) equals
    ``intercept`` plus the ``difference`` of every active feature; ``features`` holds the ``top_k``
    largest by absolute difference (all with ``None``) and ``rest`` the sum of the others, so
    ``intercept + sum(difference) + rest == margin`` always.
    """
    if not utterances:
        return []
    names = feature_names(router)
    bank = getattr(router.segmenter, "lexicons_", None)  # what matched the lexicons of every utterance
    offsets, offset = {}, 0
    for block, _, _ in names:  # the first column of each block
        offsets.setdefault(block, offset)
        offset += 1
    x = router.features(utterances)
    t = router.temperature_
    logits = (np.asarray(x @ router.weights_) + router.intercept_) / t
    proba = softmax(logits, axis=1)
    routes = router.route(utterances)
    classes = [str(c) for c in router.classes_]
    out = []
    for i, (u, route) in enumerate(zip(utterances, routes)):
        p = classes.index(route.primary_reason_code)
        others = [k for k, c in enumerate(classes) if CODE_LABEL[c] != route.label]
        r = max(others, key=lambda k: proba[i, k])
        row = x.getrow(i)
        columns, values = row.indices, row.data
        own = values * router.weights_[columns, p] / t
        runner = values * router.weights_[columns, r] / t
        difference = own - runner
        order = np.argsort(-np.abs(difference), kind="stable")
        shown = order if top_k is None else order[:top_k]
        features = []
        for j in shown:
            block, name, transformer = names[columns[j]]
            features.append({
                "feature": readable(block, name, transformer, u, int(columns[j]) - offsets[block], bank),
                "value": round(float(values[j]), 4),
                "contribution": round(float(own[j]), 4),
                "runner_up_contribution": round(float(runner[j]), 4),
                "difference": round(float(difference[j]), 4),
            })
        rest = float(difference.sum() - difference[shown].sum())
        intercept = (router.intercept_[p] - router.intercept_[r]) / t
        out.append({
            "text": u.text,
            "label": route.label,
            "primary_reason_code": route.primary_reason_code,
            "confidence": route.confidence,
            "runner_up": {"label": CODE_LABEL[classes[r]], "reason_code": classes[r],
                          "probability": round(float(proba[i, r]), 4)},
            "temperature": round(float(t), 4),
            "margin": round(float(logits[i, p] - logits[i, r]), 4),
            "intercept": round(float(intercept), 4),
            "active_features": int(len(columns)),
            "features": features,
            "rest": round(rest, 4),
        })
    return out


def format_explanation(record: dict) -> str:
    """A record with its ``explanation`` as a small text table (``fastslow explain``)."""
    explanation = record["explanation"]
    lines = [f"query       {record['query']}",
             f"label       {record['label']}  {record['primary_reason_code']}  confidence {record['confidence']:.3f}"
             + ("  (review)" if record.get("review_required") else "")]
    if len(explanation["routing"]) > 1:
        lines.append(f"            the aggregate of {len(explanation['routing'])} subrequests "
                     f"(XA4.1 聚合: 慢 > 模糊 > 快; all explicit device controls: 快)")
    for k, part in enumerate(explanation["routing"]):
        runner = part["runner_up"]
        head = "routing" if len(explanation["routing"]) == 1 else f"subrequest {k + 1}: {part['text']}"
        lines += ["", f"{head}: {part['label']} {part['primary_reason_code']} ({part['confidence']:.3f}) "
                      f"over runner-up {runner['label']} {runner['reason_code']} ({runner['probability']:.3f})",
                  f"margin {part['margin']:+.3f} = intercept {part['intercept']:+.3f} + features "
                  f"{part['margin'] - part['intercept']:+.3f}  (temperature {part['temperature']:.3f}, "
                  f"{part['active_features']} active features)",
                  f"{'margin':>8} {'chosen':>8} {'runner-up':>10}  {'value':>6}  feature"]
        for f in part["features"]:
            lines.append(f"{f['difference']:>+8.3f} {f['contribution']:>+8.3f} {f['runner_up_contribution']:>+10.3f}"
                         f"  {f['value']:>6.3f}  {f['feature']}")
        hidden = part["active_features"] - len(part["features"])
        if hidden:
            lines.append(f"{part['rest']:>+8.3f} {'':>8} {'':>10}  {'':>6}  ({hidden} other features)")
    automation = explanation.get("automation")
    if automation is not None:
        lines += ["", f"automation spans (decided by {automation['decided_by']}):"]
        if automation["spans"]:
            lines.append(f"{'kind':<10} {'confidence':>10}  span")
            lines += [f"{s['kind']:<10} {s['confidence']:>10.3f}  {s['text']}" for s in automation["spans"]]
        else:
            lines.append({"no_signal": "  no trigger, time, duration, once, reminder or memo word: plain actions, "
                                       "no condition",
                          "management": "  managing a memo item or a described automation, one subquery (a rule)"}
                         .get(automation["decided_by"], "  none"))
        for g in record.get("automation") or []:
            lines.append(f"group  condition {g['condition']!r}: "
                         + ", ".join(f"{q['subquery']} ({q.get('intent')})" for q in g["querys"]))
    return "\n".join(lines)
