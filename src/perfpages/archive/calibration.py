"""What makes a run a calibration run (`bench.calibrate`): its id, its A/A pair, its windows.

The runner side (perfpages.run.calibrate) names and shapes such a run; the analysis
(perfpages.analysis.calibration) recognises it and reads it back: both take the names here.
"""

from __future__ import annotations

from perfpages.archive.manifest import Manifest
from perfpages.errors import ArchiveError

TURN_S = 8  # the seconds a calibration turn measures, archived as 1 s windows
TWIN = "-aa"  # the twin's name: the label's, then this
SLUG = "calibrate"  # the word in a calibration run's id
MAX_MINUTES = 24 * 60  # --minutes at most a day: more is a typo (1e9 plans billions of rounds)


def twin_of(label: str) -> str:
    return label + TWIN


def check(manifest: Manifest) -> tuple[str, str, str]:
    """The block, label and twin of a calibration run; anything else: one line."""
    labels = list(manifest.labels)
    if (SLUG not in manifest.id.split("-") or len(labels) != 2 or len(manifest.blocks) != 1
            or labels[1] != twin_of(labels[0])):
        raise ArchiveError(f"run {manifest.id} is not a calibration run", key="--run",
                           fix="name a run made by bench.calibrate (its id says calibrate)")
    return next(iter(manifest.blocks)), labels[0], labels[1]
