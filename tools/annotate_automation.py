"""Turn hand-written markup lines into annotated JSONL rows (spans + expected groups).

    python tools/annotate_automation.py data/automation/train/src/core.txt --out data/automation/train/core.jsonl

One markup per line (``#`` lines are comments; see data/automation/README.md). The expected groups are the spec rules
applied to the hand-marked spans; each subquery's intent is the one written in the markup
(``[A/导航:去公司]``), else the keyword labeller's guess with the 车载控制/设备控制 rule. Review the output:
the labeller is a first guess, and a wrong guess is fixed by writing the intent in the markup.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fastslow.features.automation_lexicons import load_automation_lexicons  # noqa: E402
from fastslow.models.automation.rules import analyse, assemble, parse_markup, to_markup  # noqa: E402
from fastslow.models.automation.intents import CONTROL_INTENTS, IntentTaxonomy, control_intent, keyword_intent  # noqa: E402


def annotate(lines: list[str], prefix: str) -> list[dict]:
    lex = load_automation_lexicons()
    taxonomy = IntentTaxonomy.load()
    rows = []
    for raw in lines:
        raw = raw.strip()
        if not raw or raw.startswith("#"):
            continue
        text, spans = parse_markup(raw)
        groups = assemble(analyse(text, lex), spans)
        for g in groups:
            for q in g["querys"]:
                if q["intent"] is None:
                    q["intent"] = keyword_intent(q["subquery"], taxonomy, lex)
                elif q["intent"] in CONTROL_INTENTS:
                    q["intent"] = control_intent(q["subquery"], lex) or q["intent"]
        plain = to_markup(text, [s.__class__(s.kind, s.start, s.end, s.text) for s in spans])
        rows.append({"id": f"{prefix}-{len(rows) + 1:04d}", "query": text, "markup": plain, "expected": groups,
                     "source": "hand-written"})
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("source", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--prefix", default="core")
    args = parser.parse_args(argv)
    rows = annotate(args.source.read_text(encoding="utf-8").splitlines(), args.prefix)
    with open(args.out, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    print(f"{len(rows)} rows → {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
