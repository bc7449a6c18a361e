"""A trained python-crfsuite CRF, decoded by crfsuite for a few sequences and by numpy for a batch.

python-crfsuite trains the automation tagger (``models/automation/parser.py``) and stays the definition.
Its attributes have one definition, the parser's ``char_attributes``; they reach the CRF in two forms:

- a few texts (the server's one query at a time) are tagged by crfsuite's own ``Tagger`` (``CRFModel.tag``),
  each character's attributes given as the names the CRF knows;
- a batch (``AutomationTagger.NUMPY_BATCH`` texts or more) is decoded here with numpy (``CRFModel.decode``),
  its attributes as ids, every text at once (the parser's ``attribute_ids``: its texts laid out as one string,
  the character n-grams read as numbers and found in a hash index, ``attribute_keys``, no string made).

Each decoder is the faster one where it is used (``benchmarks/bench_automation.py``, its "CRF decoders"
lines, CPU µs per tagged text, attributes included: crfsuite ~170 given one text, ~160 in batches of 512;
numpy ~540 given one text, ~62 in batches of 512; ``NUMPY_BATCH = 32`` sits between): numpy's fixed cost
of a few hundred calls per call loses on one text, crfsuite's C calls text by text lose on a batch.

``CRFModel.from_bytes(data)`` reads the model file written by ``pycrfsuite.Trainer`` (crfsuite's
``crf1d`` format: a header, the features with their ``double`` weights, and two CQDB string tables for
the label and attribute names), so the weights are crfsuite's own, bit for bit, not the six decimals of
``Tagger.info()``. ``state_scores`` and ``decode`` do what ``Tagger.tag`` and ``Tagger.marginal`` do:

- the state score of a position is the weights of its attributes added from 0 in the order given, as
  crfsuite adds an item's attributes (an attribute given twice counts twice; an unknown one, id ``-1``,
  is dropped as crfsuite drops it): the same doubles;
- Viterbi adds ``previous + transition`` and keeps the first label of the highest score, as crfsuite's
  ``crf1dc_viterbi`` does (ties go to the lowest label id), then adds the state score: the same doubles,
  so the same tags, ties included;
- the marginal of a label at a position is ``alpha * beta`` normalised over the labels, computed with
  per-position scaling like crfsuite's ``crf1dc_alpha_score``/``crf1dc_beta_score`` (state scores are
  shifted by their maximum before ``exp``, which the scaling cancels: equal within rounding, ~1e-15).

Many sequences are decoded together: sorted by length, position ``t`` of every sequence that long is one
numpy step, so a batch costs about as many numpy calls as its longest sequence.
"""

from __future__ import annotations

import struct
import threading
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pycrfsuite

_HEADER = struct.Struct("<4sI4sIIIIIIIII")
_CHUNK = struct.Struct("<4sII")
_CQDB = struct.Struct("<4sIIIII")
_FEATURE = np.dtype([("type", "<u4"), ("src", "<u4"), ("dst", "<u4"), ("weight", "<f8")])
_STATE, _TRANSITION = 0, 1


def _cqdb_strings(data: bytes, offset: int) -> list[str]:
    """The strings of a CQDB chunk at ``offset``, by id (crfsuite's ``cqdb.c``: a backward table of record
    offsets; a record is its id, the key's size with its NUL, the key)."""
    chunk, size, _flag, _order, count, bwd = _CQDB.unpack_from(data, offset)
    if chunk != b"CQDB":
        raise ValueError(f"not a crfsuite model: no CQDB string table at {offset:#x}")
    out = []
    for k, record in enumerate(struct.unpack_from(f"<{count}I", data, offset + bwd)):
        rid, ksize = struct.unpack_from("<II", data, offset + record)
        if rid != k:
            raise ValueError(f"crfsuite model: string {k} of the table at {offset:#x} is stored as id {rid}")
        start = offset + record + 8
        out.append(data[start:start + ksize - 1].decode("utf-8"))
    return out


@dataclass(frozen=True, eq=False)
class CRFModel:
    """A trained crfsuite CRF: ``data``, the model file ``pycrfsuite.Trainer`` wrote, and it as arrays: ``labels``
    and ``attributes`` by crfsuite id, ``state`` (a row per attribute, a column per label) and ``transition``
    (``[from, to]``); 0 where crfsuite has no feature.

    It pickles as its model file and is read again from it (``__reduce__``): the arrays, the attribute lookups
    and crfsuite's tagger (one per thread, opened on first use) are rebuilt in the process that loads it."""

    data: bytes
    labels: tuple[str, ...]
    attributes: tuple[str, ...]
    state: np.ndarray
    transition: np.ndarray

    def __post_init__(self):
        # into[j, i]: the weight of i -> j (previous[i] + into[j, i] is crfsuite's previous[i] + trans[i][j]
        # to the bit: + commutes), and exp(transition) for the marginals
        object.__setattr__(self, "into", np.ascontiguousarray(self.transition.T))
        object.__setattr__(self, "exp_transition", np.exp(self.transition))
        object.__setattr__(self, "by_label", np.ascontiguousarray(self.state.T))  # a label's weights, in a row
        object.__setattr__(self, "encoded", tuple(a.encode("utf-8") for a in self.attributes))
        object.__setattr__(self, "_by_prefix", {})
        object.__setattr__(self, "_by_key", {})
        object.__setattr__(self, "_threads", threading.local())

    def __reduce__(self):
        return CRFModel.from_bytes, (self.data,)

    def attribute_ids(self, prefix: str) -> dict[str, int]:
        """The attributes whose name starts with ``prefix``, by the rest of their name, to their id."""
        found = self._by_prefix.get(prefix)
        if found is None:
            found = {a[len(prefix):]: i for i, a in enumerate(self.attributes) if a.startswith(prefix)}
            self._by_prefix[prefix] = found
        return found

    def attribute_keys(self, prefixes: tuple[str, ...], width: int) -> tuple[pd.Index, np.ndarray]:
        """The attributes named one of ``prefixes`` and ``width`` characters (``attribute_ids(prefix)``), by
        those characters as one number (``code_key``): every such number once, as a hash index (``find_keys``:
        its ``get_indexer`` looks many up at once), and per number (a row) the id of its attribute of each prefix
        (a column; ``-1``: none), then a row of ``-1``s (the row ``-1`` of a number not there)."""
        found = self._by_key.get((prefixes, width))
        if found is None:
            rows: dict[int, list[int]] = {}
            for column, prefix in enumerate(prefixes):
                for rest, i in self.attribute_ids(prefix).items():
                    if len(rest) == width:
                        rows.setdefault(code_key(rest), [-1] * len(prefixes))[column] = i
            index = pd.Index(np.fromiter(rows, dtype=np.int64, count=len(rows)))
            index.get_indexer(index[:1])  # its hash table made here, before another thread can find the index
            found = self._by_key[(prefixes, width)] = (
                index, np.array([*rows.values(), [-1] * len(prefixes)], dtype=np.intp).reshape(-1, len(prefixes)))
        return found

    def tag(self, items: list[list], marginals: bool) -> tuple[list[str], list[float] | None]:
        """crfsuite's Viterbi labels of one sequence (``items``: per position its attribute names, str or
        UTF-8 bytes; crfsuite drops those it does not know) and, with ``marginals``, the marginal probability
        of the label chosen at each position."""
        tagger = getattr(self._threads, "tagger", None)
        if tagger is None:  # a crfsuite Tagger is not shared between threads
            tagger = self._threads.tagger = pycrfsuite.Tagger()
            tagger.open_inmemory(self.data)
        path = tagger.tag(items)
        return path, list(map(tagger.marginal, path, range(len(path)))) if marginals else None

    @classmethod
    def from_bytes(cls, data: bytes) -> "CRFModel":
        magic, _size, kind, _version, _nf, n_labels, n_attrs, off_features, off_labels, off_attrs, *_ = \
            _HEADER.unpack_from(data, 0)
        if magic != b"lCRF" or kind != b"FOMC":
            raise ValueError(f"not a crfsuite CRF model (magic {magic!r}, type {kind!r})")
        chunk, _size, count = _CHUNK.unpack_from(data, off_features)
        if chunk != b"FEAT":
            raise ValueError("crfsuite model: no FEAT chunk where the header says")
        features = np.frombuffer(data, _FEATURE, count, off_features + _CHUNK.size)
        labels = tuple(_cqdb_strings(data, off_labels))
        attributes = tuple(_cqdb_strings(data, off_attrs))
        if len(labels) != n_labels or len(attributes) != n_attrs:
            raise ValueError(f"crfsuite model: {len(labels)} labels and {len(attributes)} attributes read, "
                             f"the header says {n_labels} and {n_attrs}")
        state = np.zeros((n_attrs, n_labels))
        transition = np.zeros((n_labels, n_labels))
        for table, kind in ((state, _STATE), (transition, _TRANSITION)):
            f = features[features["type"] == kind]
            table[f["src"].astype(np.intp), f["dst"].astype(np.intp)] = f["weight"]  # one feature per (src, dst)
        return cls(data, labels, attributes, state, transition)

    def state_scores(self, ids: np.ndarray, where: np.ndarray, positions: int) -> np.ndarray:
        """The state scores of ``positions`` positions, one row each: attribute ``ids[k]`` (``-1``: unknown,
        skipped) belongs to position ``where[k]``. Each position's weights are added from 0 in the order
        they come in ``ids``, as crfsuite adds an item's attributes (``np.bincount`` adds in order, a label
        at a time), so an attribute given twice counts twice and the sums are crfsuite's to the bit."""
        known = ids >= 0
        ids, where = ids[known], where[known]
        scores = np.empty((positions, len(self.by_label)))
        for label, weights in enumerate(self.by_label):
            scores[:, label] = np.bincount(where, weights=weights.take(ids), minlength=positions)
        return scores

    def decode(self, scores: np.ndarray, lengths: list[int], marginals: bool):
        """Viterbi label ids of every sequence and, with ``marginals``, the marginal probability of the
        label chosen at each position (else ``None`` per sequence): ``scores`` are the state scores of
        all positions of all sequences, one after another, ``lengths`` (each >= 1) how many each has."""
        if not len(lengths):
            return [], []
        sizes = np.asarray(lengths, dtype=np.intp)
        if sizes.min() < 1 or sizes.sum() != len(scores):
            raise ValueError(f"{len(scores)} positions scored for sequences of lengths {list(lengths)}")
        batch = len(sizes)
        order = np.argsort(-sizes, kind="stable")  # longest first: the sequences still running at step t lead
        rank = np.empty(batch, dtype=np.intp)
        rank[order] = np.arange(batch)
        by_rank = sizes[order]
        longest = int(by_rank[0])
        active = np.searchsorted(-by_rank, -np.arange(longest), side="left").tolist()  # active[t]: lengths > t
        # every position's slot in the (sequence by rank, step) table, and every slot's position (past a
        # sequence's end: len(scores), a row of padding); tables are laid out and read with ``take``
        slot = np.repeat(rank * longest, sizes) + np.arange(len(scores)) - np.repeat(np.cumsum(sizes) - sizes, sizes)
        position = np.full(batch * longest, len(scores), dtype=np.intp)
        position[slot] = np.arange(len(scores))
        padded = _table(scores, position, (batch, longest), 0.0)
        path = self._viterbi(padded, by_rank, active).take(slot)
        flat = path.tolist()
        cuts = np.cumsum(sizes).tolist()
        tags = [flat[a:b] for a, b in zip([0] + cuts, cuts)]
        if not marginals:
            return tags, [None] * batch
        chosen = self._chosen_marginals(scores, position, slot, (batch, longest), active, path).tolist()
        return tags, [chosen[a:b] for a, b in zip([0] + cuts, cuts)]

    def _viterbi(self, padded: np.ndarray, lengths: np.ndarray, active: list[int]) -> np.ndarray:
        """crfsuite's ``crf1dc_viterbi`` on sequences sorted longest first: at each position and label the best
        ``previous[i] + transition[i, label]`` over ``i``, plus the state score; the last label the first
        maximum. The back links are taken afterwards along the path only, from the same sums (so the same
        bits) with the first maximum, as crfsuite keeps a later ``i`` only when strictly higher.

        The table is kept label-major (``best[t, i, sequence]``) and the candidates of a step are a fresh
        ``cand[i, label, sequence]``, so that every elementwise loop runs along the sequences (not along rows
        of 11 labels) and the maximum over ``i`` is one elementwise ``maximum`` of whole planes (a maximum is
        the same double in any order)."""
        batch, longest, n_labels = padded.shape
        best = np.empty((longest, n_labels, batch))  # best[t]: crfsuite's alpha score at t (its Viterbi table)
        best[0] = padded[:, 0].T
        source = self.transition[:, :, None]
        for t in range(1, longest):
            n = active[t]
            cand = best[t - 1, :, None, :n] + source
            np.add(np.maximum.reduce(cand, axis=0), padded[:n, t].T, out=best[t, :, :n])
        rows = np.arange(batch)
        into = self.into
        path = np.zeros((batch, longest), dtype=np.intp)
        path[rows, lengths - 1] = best[lengths - 1, :, rows].argmax(axis=1)
        for t in range(longest - 1, 0, -1):
            n = active[t]
            path[:n, t - 1] = (best[t - 1, :, :n].T + into[path[:n, t]]).argmax(axis=1)
        return path

    def _chosen_marginals(self, scores: np.ndarray, position: np.ndarray, slot: np.ndarray, shape: tuple,
                          active: list[int], path: np.ndarray) -> np.ndarray:
        """Per position, the marginal probability of the label on ``path`` (both in ``scores``' order; ``slot``
        and ``position`` as in ``decode``, ``shape`` the table's (sequences, steps)): ``alpha * beta``
        normalised over the labels, both computed forward/backward with a normalisation at every position
        (crfsuite's scaled ``crf1dc_alpha_score``/``crf1dc_beta_score``; any per-position scale cancels).
        exp is taken, and the products formed, on the positions only, never on the padding."""
        n_labels, longest = scores.shape[1], shape[1]
        expo = _table(np.exp(scores - scores.max(axis=1, keepdims=True)), position, shape, 1.0)
        exp_trans = self.exp_transition
        alpha = np.ones_like(expo)  # (1s past a sequence's end: unused, but no 0/0)
        beta = np.ones_like(expo)  # a sequence's last position keeps 1s
        a = expo[:, 0]
        alpha[:, 0] = a / a.sum(axis=1, keepdims=True)
        for t in range(1, longest):
            n = active[t]
            a = (alpha[:n, t - 1] @ exp_trans) * expo[:n, t]
            alpha[:n, t] = a / a.sum(axis=1, keepdims=True)
        for t in range(longest - 2, -1, -1):
            n = active[t + 1]
            b = (beta[:n, t + 1] * expo[:n, t + 1]) @ exp_trans.T
            beta[:n, t] = b / b.sum(axis=1, keepdims=True)
        joint = alpha.reshape(-1, n_labels).take(slot, axis=0) * beta.reshape(-1, n_labels).take(slot, axis=0)
        return joint[np.arange(len(path)), path] / joint.sum(axis=1)


#: code points are below this: up to three of them, as the digits of one number, fit in an int64
CODE_POINTS = 0x110000


def code_key(chars: str) -> int:
    """``chars`` (at most three) as one number: their code points as digits of base ``CODE_POINTS``."""
    key = 0
    for ch in chars:
        key = key * CODE_POINTS + ord(ch)
    return key


def find_keys(keys: np.ndarray, known: pd.Index) -> np.ndarray:
    """The row of each of ``keys`` in ``known`` (``CRFModel.attribute_keys``), ``-1`` (the last row) where it is
    not there. A hash lookup: a sorted array and ``searchsorted`` measured ~5x slower (8,000 keys among 400 to
    1,100 known: ~0.55-0.65 ms against ~0.08-0.14 ms)."""
    return known.get_indexer(keys)


def _table(rows: np.ndarray, position: np.ndarray, shape: tuple, fill: float) -> np.ndarray:
    """``rows`` (one per position) laid out in a table of ``shape`` slots: slot ``k`` holds
    ``rows[position[k]]``, or ``fill``s where ``position[k]`` is ``len(rows)`` (``take``: a fancy assignment
    of rows into a 3-d table costs several times more)."""
    filled = np.concatenate([rows, np.full((1, rows.shape[1]), fill)])
    return filled.take(position, axis=0).reshape(*shape, rows.shape[1])
