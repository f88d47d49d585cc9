"""What a forward call may return: a tensor or a tuple of tensors."""

from typing import Any, List, Optional

import torch


def output_list(value: Any) -> Optional[List[Any]]:
    """The outputs as a list, or None when the container itself is not allowed (e.g. a list)."""
    if isinstance(value, torch.Tensor):
        return [value]
    if type(value) is tuple:
        return list(value)
    return None


def kind_error(value: Any) -> str:
    return f"forward returned {type(value).__name__}, expected tensor or tuple of tensors"
