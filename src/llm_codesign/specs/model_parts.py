"""Parts of a model spec besides its attention shape: DeepSeek Sparse Attention's lightning
indexer, DeepSeek-V4's compressed attention, a linear-attention (recurrent) layer, and the MoE
FFN. :mod:`.model` re-exports them with :class:`.model.ModelSpec`, which holds them.
"""

from __future__ import annotations

from dataclasses import dataclass

# DeepSeek-V4 runs the indexer in its ratio-4 layers alone (CSA) and pools overlapping windows of
# twice the ratio there (reference inference/model.py ``Attention``: ``Indexer`` where
# ``compress_ratio == 4``, ``Compressor(overlap=compress_ratio == 4)``; vLLM
# models/deepseek_v4/compressor.py ``coff = 1 + overlap``)
CSA_RATIO = 4


INDEXER_KINDS = ("dsa", "msa")


@dataclass(frozen=True)
class IndexerSpec:
    """A sparse-attention indexer (``kind``): ``num_heads`` x ``head_dim`` scores of each query
    against one cached ``head_dim`` key per token, then the core attends at most ``topk`` tokens:

    * ``dsa``, DeepSeek Sparse Attention's lightning indexer (DeepSeek-V3.2, GLM-5;
      architectures.md section 1): the ``topk`` best tokens, the heads' scores summed by learned
      per-head weights (weights_proj, hidden -> heads), FP8 keys with an FP32 scale per 128;
    * ``msa``, MiniMax Sparse Attention (MiniMax-M3; docs/MODEL_FACTS.md): tokens chosen in
      blocks of ``block`` tokens, a block scored by its best token, the top blocks (the query's
      own block always among them) plus any always-kept initial blocks; ``topk`` is their
      tokens, (top + init) x block; no per-head weights, an RMSNorm on the query and on the
      key; its keys of ``key_bytes`` each, no scale (BF16, 2: vLLM's default
      ``indexer_kv_dtype``; FP8 only on SM100 when asked for: ``+fp8-idx``, ``mixers.indexer_of``;
      vllm models/minimax_m3/common/indexer.py)."""

    num_heads: int
    head_dim: int
    topk: int
    kind: str = "dsa"
    block: int = 1
    key_bytes: float = 1.0

    def __post_init__(self) -> None:
        if self.kind not in INDEXER_KINDS:  # pragma: no cover - parsers set it
            raise ValueError(f"indexer kind {self.kind!r}; allowed: {', '.join(INDEXER_KINDS)}")

    def params(self, hidden: int, q_lora_rank: int) -> int:
        """DSA: wq_b (q latent -> heads x dim), wk (hidden -> dim) + its LayerNorm (weight,
        bias), weights_proj (hidden -> heads): DeepSeek-V3.2-Exp inference/model.py
        ``Indexer``. MSA: q_proj (hidden -> heads x dim), k_proj (hidden -> dim) and an RMSNorm
        of dim on each (transformers models/minimax_m3_vl ``MiniMaxM3VLIndexer``)."""
        q_in = q_lora_rank or hidden
        weights = hidden * self.num_heads if self.kind == "dsa" else 0
        return (
            q_in * self.num_heads * self.head_dim
            + hidden * self.head_dim
            + 2 * self.head_dim
            + weights
        )

    @property
    def key_width(self) -> int:
        """Outputs of the key-side projection: the key (``head_dim``) and, for DSA, the
        per-head weights (``num_heads``)."""
        return self.head_dim + (self.num_heads if self.kind == "dsa" else 0)

    @property
    def cache_bytes_per_token(self) -> float:
        """Indexer key cache per token per layer: DSA's ``head_dim`` FP8 values + one FP32
        scale per 128 (132 B for head_dim 128; DeepSeek-V3.2-Exp model.py, vLLM's DSV3.2 blog);
        MSA's ``head_dim`` values of ``key_bytes`` (BF16: 256 B)."""
        if self.kind == "msa":
            return self.head_dim * self.key_bytes
        return self.head_dim * 1.0 + 4.0 * -(-self.head_dim // 128)

    @property
    def math_class(self) -> str:
        """Tensor-core class of its scoring: FP8 over FP8 keys (DSA's DeepGEMM logits), else
        BF16 (MSA's scorer over BF16 keys)."""
        return "fp8" if self.key_bytes == 1.0 else "bf16"


@dataclass(frozen=True)
class CompressorSpec:
    """DeepSeek-V4's KV compressor (reference ``inference/model.py`` ``Compressor``; vLLM
    ``models/deepseek_v4/compressor.py``): in a layer of ratio r it projects each token to
    ``coff`` x head_dim values and as many gate scores (``wkv``, ``wgate``: hidden -> coff x d,
    coff 2 at ratio 4 where windows of 2r tokens overlap, else 1), and pools every r tokens into
    one cached entry by a softmax over the window's slots, then an RMSNorm and RoPE. Decoding
    keeps the unpooled window as FP32 state, ``coff`` x r slots of 2 x coff x d (kv and score).
    ``window``: the raw tokens every layer also attends (``sliding_window``). The CSA layers'
    indexer (``ModelSpec.indexer``) scores entries of its own ratio-4 compressor of width
    ``IndexerSpec.head_dim``.

    Example (DeepSeek-V4-Pro, hidden 7168, head_dim 512):
        >>> c = CompressorSpec(128)
        >>> c.params(7168, 4, 512), c.state_bytes(4, 512), c.state_bytes(128, 512)
        (14684672, 65536.0, 524288.0)
    """

    window: int
    state_element_bytes: float = 4.0

    @staticmethod
    def overlap(ratio: int) -> int:
        return 2 if ratio == CSA_RATIO else 1

    @staticmethod
    def indexed(ratio: int) -> bool:
        """Whether a layer of this ratio selects its entries with the indexer (CSA)."""
        return ratio == CSA_RATIO

    def params(self, hidden: int, ratio: int, dim: int) -> int:
        """wkv and wgate (hidden -> coff x dim each), the slot bias ``ape`` (ratio x coff x
        dim) and the entry's RMSNorm (dim)."""
        width = self.overlap(ratio) * dim
        return 2 * hidden * width + ratio * width + dim

    def state_bytes(self, ratio: int, dim: int) -> float:
        """Bytes of one sequence's decode state in one layer: coff x ratio slots of kv and
        score (2 x coff x dim) in FP32 (vLLM ``CompressorStateCache``)."""
        c = self.overlap(ratio)
        return c * ratio * 2 * c * dim * self.state_element_bytes

    def indexer_params(self, hidden: int, q_lora_rank: int, idx: IndexerSpec) -> int:
        """A CSA layer's indexer: queries from the q latent (q_lora -> heads x dim), per-head
        weights from the hidden state (hidden -> heads) and its own ratio-4 compressor of
        width ``idx.head_dim``."""
        q = q_lora_rank * idx.num_heads * idx.head_dim
        return q + hidden * idx.num_heads + self.params(hidden, CSA_RATIO, idx.head_dim)


@dataclass(frozen=True)
class LinearAttentionSpec:
    """A linear-attention (recurrent) layer with a fixed state per sequence; ``kind``:

    * ``gated_deltanet`` (Qwen3-Next, Qwen3.5; architectures.md section 2): ``num_v_heads``
      states of ``head_k_dim`` x ``head_v_dim``, a causal depthwise convolution of
      ``conv_kernel`` over q, k, v, per-head decay and beta, a gated RMSNorm per head;
    * ``lightning`` (MiniMax-01 / MiniMax-M1, arXiv 2501.08313; transformers
      ``MiniMaxLightningAttention``): one ``head_k_dim`` x ``head_v_dim`` K^T V state per head
      with a fixed per-head decay, no convolution, a sigmoid output gate and an RMSNorm over all
      heads; prefill in blocks of ``chunk`` tokens;
    * ``mamba2`` (Mamba-2 SSD, Nemotron-H; arXiv 2405.21060, HF ``NemotronHMamba2Mixer``): the
      fields map as ``num_k_heads`` = n_groups and ``head_k_dim`` = ssm_state_size (B and C),
      ``num_v_heads`` = mamba heads of ``head_v_dim`` (x); one head_dim x d_state state per
      head, a convolution over x, B, C (with bias), dt/A/D per head, a gated RMSNorm over
      d_inner.

    ``state_bytes`` per state element (the config's ``mamba_ssm_dtype``: FP32 in Qwen3.5, else
    the model dtype)."""

    num_k_heads: int
    num_v_heads: int
    head_k_dim: int
    head_v_dim: int
    conv_kernel: int
    state_bytes: float = 2.0
    kind: str = "gated_deltanet"
    chunk: int = 64

    @property
    def key_dim(self) -> int:
        return self.num_k_heads * self.head_k_dim

    @property
    def value_dim(self) -> int:
        return self.num_v_heads * self.head_v_dim

    @property
    def conv_dim(self) -> int:
        """Channels through the short convolution: q and k (key_dim each) and v (0: none)."""
        return 2 * self.key_dim + self.value_dim if self.conv_kernel else 0

    @property
    def in_proj_width(self) -> int:
        """Projections from the hidden state: q, k, v and the output gate, plus (Gated
        DeltaNet) beta and alpha per value head."""
        gates = {"gated_deltanet": 2, "mamba2": 1}.get(self.kind, 0) * self.num_v_heads
        return 2 * self.key_dim + 2 * self.value_dim + gates

    def params(self, hidden: int) -> int:
        """Gated DeltaNet: in_proj_qkvz + in_proj_ba, conv1d (no bias), dt_bias and A_log per
        v-head, the gated RMSNorm over head_v_dim, out_proj (HF ``Qwen3NextGatedDeltaNet``).
        Lightning: qkv_proj + output_gate, the RMSNorm over all heads, out_proj (HF
        ``MiniMaxLightningAttention``). Mamba-2: in_proj (z, x, B, C, dt), conv1d with bias,
        dt_bias, A_log and D per head, the gated RMSNorm, out_proj."""
        proj = hidden * self.in_proj_width + self.value_dim * hidden
        if self.kind == "lightning":
            return proj + self.value_dim
        if self.kind == "mamba2":  # conv weight + bias, dt_bias/A_log/D, norm over d_inner
            conv = self.conv_dim * (self.conv_kernel + 1)
            return proj + conv + 3 * self.num_v_heads + self.value_dim
        return proj + self.conv_dim * self.conv_kernel + 2 * self.num_v_heads + self.head_v_dim

    @property
    def state_elements(self) -> int:
        """Recurrent state per sequence per layer: num_v_heads x head_k_dim x head_v_dim."""
        return self.num_v_heads * self.head_k_dim * self.head_v_dim

    def state_bytes_per_sequence(self, conv_bytes: float = 2.0) -> float:
        """Bytes one sequence holds per layer, independent of its length: the recurrent state
        plus the convolution's last ``conv_kernel - 1`` inputs (vLLM mamba_utils shapes)."""
        conv = max(self.conv_kernel - 1, 0) * self.conv_dim * conv_bytes
        return self.state_elements * self.state_bytes + conv


@dataclass(frozen=True)
class MoESpec:
    """Mixture-of-experts FFN: E routed experts of width ``expert_intermediate``, top-k routing,
    plus ``num_shared`` always-on experts of width ``shared_intermediate``."""

    num_experts: int
    top_k: int
    expert_intermediate: int
    num_shared: int = 0
    shared_intermediate: int = 0
    expert_bias: bool = False
    router_bias: bool = False
