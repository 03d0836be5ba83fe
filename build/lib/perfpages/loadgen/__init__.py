"""HTTP load: a `Load` of `Request` templates (spec), run from spawned worker processes
(generator, worker), counted per window (tally) into mergeable HdrHistograms.
"""
