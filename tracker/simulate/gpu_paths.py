"""transformers code paths that depend on the device or on tensor values, pinned to a GPU run's.

Fake tensors have no values and live on the CPU, so two decisions transformers
makes at run time would go the other way than on a GPU:

- whether the causal mask can be left to SDPA's ``is_causal``: transformers
  checks that the padding mask is all ones and that the position ids hold
  one sequence per row (no packing), and treats any fake tensor as a traced
  graph where it cannot look; the simulation neither pads nor packs, so
  both checks answer as for an unpadded, unpacked GPU batch;
- MoE experts' ``grouped_mm``: its meta function accepts bf16 only; outside
  bf16 transformers' own fallback op runs (same inputs, outputs and saved
  tensors), as it does on GPUs without the kernel.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator


@contextlib.contextmanager
def gpu_paths() -> Iterator[None]:
    """While active, transformers takes the paths an unpadded GPU step takes."""
    from transformers import masking_utils
    from transformers.integrations import moe

    skip, packed = masking_utils._ignore_causal_mask_sdpa, masking_utils.find_packed_sequence_indices
    grouped = moe._can_use_grouped_mm

    def unpadded(padding_mask, *args, **kwargs):
        return skip(None, *args, **kwargs)

    masking_utils._ignore_causal_mask_sdpa = unpadded
    masking_utils.find_packed_sequence_indices = lambda position_ids: None
    moe._can_use_grouped_mm = lambda input, weight, offs: (
        input.dtype == weight.dtype and str(weight.dtype) == "torch.bfloat16")
    try:
        yield
    finally:
        masking_utils._ignore_causal_mask_sdpa = skip
        masking_utils.find_packed_sequence_indices = packed
        moe._can_use_grouped_mm = grouped
