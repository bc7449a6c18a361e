"""Feature extraction for fastslow: normalisation, jieba segmentation and lexicon extractors.

Every learned or fitted part is a scikit-learn transformer over a list of ``Utterance`` objects
(see ``features.text``), so segmentation happens once per query and every extractor reads it.
"""

from fastslow.features.text import Utterance, Segmenter
from fastslow.features.normalise import normalise
from fastslow.features.extractors import (
    CharNgrams,
    WordTokens,
    TriggerMarkers,
    SensationWords,
    SceneWords,
    DeviceLexicon,
    ActionLexicon,
    QuestionMarkers,
    Connectors,
    Demonstratives,
    NumbersUnits,
    ContextFeatures,
    EndpointFeatures,
    ExplicitTarget,
    AutomationParse,
    WhereItRuns,
)

__all__ = [
    "Utterance", "Segmenter", "normalise", "CharNgrams", "WordTokens", "TriggerMarkers",
    "SensationWords", "SceneWords", "DeviceLexicon", "ActionLexicon", "QuestionMarkers",
    "Connectors", "Demonstratives", "NumbersUnits", "ContextFeatures", "EndpointFeatures", "ExplicitTarget",
    "AutomationParse", "WhereItRuns",
]
