"""Scales over training: the std of every tensor at chosen steps (a `tracks` dict, step -> the
`core.unit_scaling.analysis.tensor_scales` of that step), checked and plotted against number formats' ranges, so a
reader sees which tensors drift out of FP8's range as training goes on (the official library's `track_scales`).
The functions live in core.scales, which needs no JAX (a stored record's report draws them); this module is their
place in the unit-scaling package.

    tracks = {0: tensor_scales(model, v0, loss), 1000: tensor_scales(model, v1000, loss)}
    out_of_range(tracks, "e4m3", kinds=("activation",))   # [(step, TensorScale), ...]
    fig = plot_scale_tracks(tracks)                        # the caller saves and closes it
"""

from __future__ import annotations

from core.scales import KINDS, FormatRange, Tracks, format_range, out_of_range, plot_scale_tracks

__all__ = ["KINDS", "FormatRange", "Tracks", "format_range", "out_of_range", "plot_scale_tracks"]
