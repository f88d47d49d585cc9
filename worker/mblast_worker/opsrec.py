"""Which heavy aten ops a forward call dispatches, to report candidates that call the
reference's own library op (allowed, but not a kernel of their own)."""

from typing import Any, Callable, Dict, FrozenSet, List, Set

from torch.utils._python_dispatch import TorchDispatchMode

# Families that are always "the heavy op" when the reference uses them.
HEAVY_FAMILIES: Dict[str, FrozenSet[str]] = {
    "matmul": frozenset(
        {"mm", "bmm", "addmm", "matmul", "linear", "baddbmm", "addbmm", "addmv", "mv", "dot", "vdot",
         "_addmm_activation", "einsum", "tensordot", "_scaled_mm", "_int_mm"}
    ),
    "convolution": frozenset(
        {"convolution", "_convolution", "_convolution_mode", "conv1d", "conv2d", "conv3d",
         "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "cudnn_convolution",
         "cudnn_convolution_transpose", "cudnn_convolution_relu", "cudnn_convolution_add_relu",
         "mkldnn_convolution", "miopen_convolution", "_slow_conv2d_forward", "slow_conv3d_forward",
         "slow_conv_transpose2d", "slow_conv_transpose3d", "slow_conv_dilated2d", "slow_conv_dilated3d",
         "thnn_conv2d", "_nnpack_spatial_convolution", "convolution_overrideable", "_conv_depthwise2d",
         "conv_depthwise3d"}
    ),
    "attention": frozenset(
        {"scaled_dot_product_attention", "_scaled_dot_product_flash_attention",
         "_scaled_dot_product_flash_attention_for_cpu", "_scaled_dot_product_efficient_attention",
         "_scaled_dot_product_cudnn_attention", "_scaled_dot_product_attention_math",
         "_flash_attention_forward", "_efficient_attention_forward", "_fused_sdp_choice"}
    ),
}

# Families that count only when the reference has no heavy op and uses them itself.
DOMINANT_FAMILIES: Dict[str, FrozenSet[str]] = {
    "softmax": frozenset({"softmax", "_softmax", "log_softmax", "_log_softmax", "_safe_softmax"}),
    "layer_norm": frozenset({"layer_norm", "native_layer_norm"}),
    "batch_norm": frozenset(
        {"batch_norm", "native_batch_norm", "_native_batch_norm_legit", "_native_batch_norm_legit_no_training",
         "_native_batch_norm_legit_functional", "cudnn_batch_norm", "miopen_batch_norm", "_batch_norm_impl_index",
         "_batch_norm_with_update", "_batch_norm_no_update"}
    ),
    "group_norm": frozenset({"group_norm", "native_group_norm"}),
    "rms_norm": frozenset({"rms_norm", "_fused_rms_norm"}),
}


class OpRecorder(TorchDispatchMode):
    """Records the name (overload packet) of every aten op dispatched while active."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: Set[str] = set()

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        packet = getattr(func, "overloadpacket", None)
        name = getattr(packet, "__name__", None) or str(func).split(".")[-2]
        self.ops.add(str(name))
        return func(*args, **(kwargs or {}))


def record_ops(call: Callable[[], Any]) -> Set[str]:
    recorder = OpRecorder()
    with recorder:
        call()
    return recorder.ops


def families(ops: Set[str], table: Dict[str, FrozenSet[str]]) -> Set[str]:
    return {fam for fam, names in table.items() if ops & names}


def shared_reference_ops(ref_ops: Set[str], cand_ops: Set[str]) -> List[str]:
    """The reference's heavy (or, lacking one, dominant) op families that the candidate calls too."""
    ref_heavy = families(ref_ops, HEAVY_FAMILIES)
    table = HEAVY_FAMILIES if ref_heavy else DOMINANT_FAMILIES
    relevant = families(ref_ops, table)
    shared = sorted(relevant & families(cand_ops, table))
    return [f"{fam} ({', '.join(sorted(cand_ops & table[fam]))})" for fam in shared]
