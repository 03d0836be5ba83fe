"""HTTP load: a `Load` of `Request` templates (spec), serialised once (template), run from forked
worker processes (generator, worker) over kept-alive HTTP/1.1 connections (client), counted per
window (tally) into mergeable HdrHistograms.
"""
