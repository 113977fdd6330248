"""The "Size my next run" wizard: model, training, hardware and result pages over a Draft."""
