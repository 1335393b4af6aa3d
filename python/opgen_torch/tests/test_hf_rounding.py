"""`rounding="hf"` against real HF transformers modules in a real PyTorch (CPU backend of the
generated kernels, `cargo xtask torch-cpu`): the fraction of elements bit-exact with

- transformers' Qwen2RMSNorm (rms_norm),
- the decoder's `residual + hidden_states` then Qwen2RMSNorm (add_rms_norm),
- Qwen2MLP's `act_fn(gate) * up` with act_fn = ACT2FN["silu"] (swiglu),
- transformers' apply_rotary_pos_emb (rotary_mul, also in float32: "hf" must be bit-exact),

in bfloat16 and float16 over a few thousand rows, for `rounding="hf"` and `rounding="once"`.
The kernel's float32 mean of squares is summed in a tree order, torch's in its own: rows whose
float32 rstd differs can differ in a 16-bit element; "hf" must be bit-exact on all but a
small share (measured figures printed; bar: 99.9%), "once" is off HF on ~25%.

Usage: PYTHONPATH=<torch-cpu --out DIR> python test_hf_rounding.py
"""

import unittest

import torch

import opgen_torch  # noqa: F401  (registers torch.ops.opgen)

OPS = torch.ops.opgen
SIXTEEN = (torch.bfloat16, torch.float16)

try:
    from transformers.activations import ACT2FN
    from transformers.models.qwen2.modeling_qwen2 import Qwen2RMSNorm, apply_rotary_pos_emb
except ImportError:  # pragma: no cover - the project's venv has transformers
    Qwen2RMSNorm = None


def gen(seed):
    return torch.Generator().manual_seed(seed)


def exact_fraction(got, want):
    bits = torch.int32 if got.dtype == torch.float32 else torch.int16
    same = (got.view(bits) == want.view(bits)) | (torch.isnan(got) & torch.isnan(want))
    return same.double().mean().item()


@unittest.skipIf(Qwen2RMSNorm is None, "transformers is not installed")
class HfRounding(unittest.TestCase):
    ROWS = 2048
    HIDDEN = 896  # Qwen2-0.5B

    def norm(self, dtype, seed):
        norm = Qwen2RMSNorm(self.HIDDEN, eps=1e-6).to(dtype)
        with torch.no_grad():
            norm.weight.copy_((torch.rand(self.HIDDEN, generator=gen(seed)) * 1.7 + 0.3).to(dtype))
        return norm

    def test_rms_norm(self):
        for dtype in SIXTEEN:
            norm = self.norm(dtype, 1)
            x = (torch.randn(self.ROWS, self.HIDDEN, generator=gen(2)) * 2.5).to(dtype)
            with torch.no_grad():
                want = norm(x)
                hf, _ = OPS.rms_norm(x, norm.weight, 1e-6, "hf")
                once, _ = OPS.rms_norm(x, norm.weight, 1e-6, "once")
            e_hf, e_once = exact_fraction(hf, want), exact_fraction(once, want)
            print(f"rms_norm {dtype}: {want.numel()} elements; bit-exact with Qwen2RMSNorm: hf {e_hf:.6f}, once {e_once:.4f}")
            self.assertGreaterEqual(e_hf, 0.999)
            self.assertLess(e_once, 0.9)

    def test_add_rms_norm(self):
        for dtype in SIXTEEN:
            norm = self.norm(dtype, 3)
            residual = (torch.randn(self.ROWS, self.HIDDEN, generator=gen(4)) * 2.5).to(dtype)
            hidden = (torch.randn(self.ROWS, self.HIDDEN, generator=gen(5)) * 2.5).to(dtype)
            with torch.no_grad():
                summed = residual + hidden
                want = norm(summed)
                hf, _, x_sum = OPS.add_rms_norm(residual, hidden, norm.weight, 1e-6, "hf")
                once, _, _ = OPS.add_rms_norm(residual, hidden, norm.weight, 1e-6, "once")
            self.assertEqual(exact_fraction(x_sum, summed), 1.0)
            e_hf, e_once = exact_fraction(hf, want), exact_fraction(once, want)
            print(f"add_rms_norm {dtype}: {want.numel()} elements; bit-exact with residual + Qwen2RMSNorm: hf {e_hf:.6f}, once {e_once:.4f}")
            self.assertGreaterEqual(e_hf, 0.999)
            self.assertLess(e_once, 0.9)

    def test_swiglu(self):
        act = ACT2FN["silu"]
        for dtype in SIXTEEN:
            gate = (torch.randn(self.ROWS, 4864, generator=gen(6)) * 3.0).to(dtype)
            up = (torch.randn(self.ROWS, 4864, generator=gen(7)) * 2.0).to(dtype)
            with torch.no_grad():
                want = act(gate) * up
                hf = OPS.swiglu(gate, up, "hf")
                once = OPS.swiglu(gate, up, "once")
            e_hf, e_once = exact_fraction(hf, want), exact_fraction(once, want)
            print(f"swiglu {dtype}: {want.numel()} elements; bit-exact with act_fn(gate) * up: hf {e_hf:.6f}, once {e_once:.4f}")
            self.assertGreaterEqual(e_hf, 0.999)
            self.assertLess(e_once, 0.9)

    def test_rotary_mul(self):
        # HF's own apply_rotary_pos_emb on q/k [B, H, S, D] with cos/sin [B, S, D] (unsqueezed to
        # [B, 1, S, D], BNSD 11SD for the op) from Qwen2RotaryEmbedding's formula: "hf" must be
        # bit-exact in every dtype, float32 included (two rounded products and a rounded sum).
        heads, seq, dim = 8, 512, 128
        inv_freq = 1.0 / (1000000.0 ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))
        freqs = torch.arange(seq, dtype=torch.float32)[:, None] * inv_freq[None, :]
        emb = torch.cat((freqs, freqs), dim=-1)[None]
        for dtype in (torch.bfloat16, torch.float16, torch.float32):
            q = (torch.randn(1, heads, seq, dim, generator=gen(8)) * 2.0).to(dtype)
            k = (torch.randn(1, 2, seq, dim, generator=gen(9)) * 2.0).to(dtype)
            cos, sin = emb.cos().to(dtype), emb.sin().to(dtype)
            with torch.no_grad():
                want_q, want_k = apply_rotary_pos_emb(q, k, cos, sin)
                c, s = cos.unsqueeze(1), sin.unsqueeze(1)
                hf = (OPS.rotary_mul(q, c, s, "half", "hf"), OPS.rotary_mul(k, c, s, "half", "hf"))
                once = OPS.rotary_mul(q, c, s, "half", "once")
            e_q, e_k = exact_fraction(hf[0], want_q), exact_fraction(hf[1], want_k)
            e_once = exact_fraction(once, want_q)
            n = want_q.numel() + want_k.numel()
            print(f"rotary_mul {dtype}: {n} elements; bit-exact with apply_rotary_pos_emb: hf q {e_q:.6f} k {e_k:.6f}, once (q) {e_once:.4f}")
            self.assertEqual(e_q, 1.0)
            self.assertEqual(e_k, 1.0)
            self.assertLess(e_once, 0.99)


if __name__ == "__main__":
    unittest.main(verbosity=2)
