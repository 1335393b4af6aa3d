"""One training step of a tiny random Qwen3-VL (built from a config: no download) with an image,
opgen_torch.transformers.apply_to_qwen3_vl against the unpatched model, on the CPU backend (the
generated kernels on the twin): issue 27, item 3 (the second field report trains Qwen3-VL-8B).

float32: loss within 1e-5 relative, each gradient's cosine >= 0.9999 and its norm within 1e-4;
bfloat16: each gradient's cosine >= 0.98 and its norm within 20 %, the logits' cosine >= 0.999 (the
bars of test_train_qwen.py); every parameter that gets a gradient unpatched gets one patched, and
the opgen forward and backward ops recorded as dispatched (a TorchDispatchMode below autograd):
the text decoder's rms_norm, add_rms_norm, swiglu (and rotary_mul), the vision tower's layer_norm,
gelu_tanh (the vision MLP's gelu_pytorch_tanh) and gelu_erf (the patch merger's nn.GELU).

Usage: PYTHONPATH=<torch-cpu --out DIR> python test_train_qwen3_vl.py   (scripts/check_torch_train.sh)
"""

import time
import unittest

import torch

import opgen_torch
import opgen_torch.transformers as patch
import transformers
from test_train_qwen import BARS, NORM_BARS, RecordOps, cosine

FIVE = int(transformers.__version__.split(".")[0]) >= 5

IMAGE, VISION_START, VISION_END = 125, 126, 127
GRID = torch.tensor([[1, 4, 4]])  # one image: 1 frame of 4 x 4 patches -> 2 x 2 merged -> 4 tokens
TOKENS = torch.tensor([[3, 17, 99, VISION_START, IMAGE, IMAGE, IMAGE, IMAGE, VISION_END, 5, 64, 2, 8, 120]])


def tiny(vision_act="gelu_pytorch_tanh"):
    """Text: hidden 64, 2 layers, 4 heads, 2 kv heads, head_dim 16 (mrope sections 4 + 2 + 2 = 8
    frequencies), vocab 128. Vision: hidden 32, 2 blocks, 2 heads, patch 4, 2 x 2 merge, a deepstack
    merger after block 0. Random norm weights and biases (ones and zeros would hide one not applied)."""
    torch.manual_seed(0)
    rope = {"rope_type": "default", "mrope_section": [4, 2, 2]}
    text = dict(
        vocab_size=128,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        max_position_embeddings=64,
    )
    if FIVE:  # 5.x: rope_parameters (rope_theta inside); 4.x: rope_scaling and rope_theta
        text["rope_parameters"] = {**rope, "rope_theta": 10000.0}
    else:
        text.update(rope_scaling=rope, rope_theta=10000.0)
    vision = dict(
        depth=2,
        hidden_size=32,
        hidden_act=vision_act,
        intermediate_size=64,
        num_heads=2,
        in_channels=3,
        patch_size=4,
        spatial_merge_size=2,
        temporal_patch_size=2,
        out_hidden_size=64,
        num_position_embeddings=16,
        deepstack_visual_indexes=[0],
    )
    config = transformers.Qwen3VLConfig(
        text_config=text,
        vision_config=vision,
        image_token_id=IMAGE,
        vision_start_token_id=VISION_START,
        vision_end_token_id=VISION_END,
        video_token_id=124,
    )
    config._attn_implementation = "eager"
    config.text_config._attn_implementation = "eager"
    config.vision_config._attn_implementation = "eager"
    model = transformers.Qwen3VLForConditionalGeneration(config)
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.copy_(torch.rand(p.shape, generator=g) + (0.5 if name.endswith("weight") else -0.5))
    return model.train()


def pixels():
    """The image's patches: [frames * h * w, channels * temporal_patch * patch * patch]."""
    g = torch.Generator().manual_seed(2)
    return torch.randn(16, 3 * 2 * 4 * 4, generator=g)


def inputs(dtype):
    """The model's inputs for TOKENS with the image (5.x also wants the processor's
    mm_token_type_ids: 1 where an image token is)."""
    kwargs = dict(input_ids=TOKENS, labels=TOKENS, pixel_values=pixels().to(dtype), image_grid_thw=GRID)
    if FIVE:
        kwargs["mm_token_type_ids"] = (TOKENS == IMAGE).int()
    return kwargs


def step(model):
    """One training step's forward and backward with the image: loss, logits, {parameter: gradient}."""
    model.zero_grad(set_to_none=True)
    out = model(**inputs(model.dtype))
    out.loss.backward()
    return out.loss.detach(), out.logits.detach(), {n: p.grad for n, p in model.named_parameters()}


TEXT_OPS = {"rms_norm", "add_rms_norm", "swiglu", "rms_norm_grad", "add_rms_norm_grad", "swiglu_grad"}


class TrainingStep(unittest.TestCase):
    def check(self, vision_act, gelu, dtype=torch.float32):
        """One step, patched vs unpatched; `gelu` is the vision MLP's op."""
        started = time.perf_counter()
        want_loss, want_logits, want_grads = step(tiny(vision_act).to(dtype))
        model = patch.apply_to_qwen3_vl(tiny(vision_act).to(dtype))
        patched = patch.patched_modules(model)
        # The vision MLPs' act_fn runs `gelu`, the mergers' nn.GELU gelu_erf, every LayerNorm
        # layer_norm, the vision attention's rotary rotary_mul.
        visual = {n: op for n, op in patched.items() if ".visual." in f".{n}"}
        blocks = len(model.model.visual.blocks) if hasattr(model, "model") else len(model.visual.blocks)
        self.assertEqual(sorted(visual.values()).count("layer_norm"), 2 * blocks + 2)  # norm1/norm2, 2 mergers
        self.assertEqual([op for n, op in visual.items() if n.endswith("mlp.act_fn")], [gelu] * blocks)
        self.assertEqual([op for n, op in visual.items() if "merger" in n and n.endswith("act_fn")], ["gelu_erf"] * 2)
        self.assertEqual([op for n, op in visual.items() if n.endswith("attn")], ["rotary_mul"] * blocks)
        text = {op for n, op in patched.items() if n not in visual}
        self.assertEqual(text, {"rms_norm", "swiglu", "add_rms_norm", "rotary_mul"})
        with RecordOps() as rec:
            loss, logits, grads = step(model)

        expected = TEXT_OPS | {"layer_norm", "layer_norm_grad", gelu, f"{gelu}_grad", "gelu_erf", "gelu_erf_grad"}
        rotary_trains = "rotary_mul" in opgen_torch.ops.BACKWARD
        if rotary_trains:
            expected |= {"rotary_mul", opgen_torch.ops.BACKWARD["rotary_mul"]}
        self.assertEqual(rec.opgen(), expected)
        # rotary_mul on q and k in every text layer and every vision block: the vision's ran too.
        layers = model.config.text_config.num_hidden_layers
        self.assertEqual(rec.ops.count("opgen.rotary_mul.default"), 2 * (layers + blocks))

        self.assertEqual(sorted(grads), sorted(want_grads))
        lost = [n for n, g in grads.items() if g is None and want_grads[n] is not None]
        self.assertEqual(lost, [], "parameters without a gradient")
        with_grads = [n for n in grads if want_grads[n] is not None]
        self.assertTrue(any("visual" in n for n in with_grads), "the image reaches no vision parameter")
        cosines = {n: cosine(grads[n], want_grads[n]) for n in with_grads}
        worst = min(cosines, key=cosines.get)
        norms = {n: abs(float(grads[n].double().norm() / want_grads[n].double().norm()) - 1) for n in with_grads}
        worst_norm = max(norms, key=norms.get)
        delta = abs(float(loss) - float(want_loss)) / abs(float(want_loss))
        if dtype == torch.float32:
            self.assertLessEqual(delta, 1e-5, "loss")
        else:
            self.assertGreaterEqual(cosine(logits, want_logits), 0.999, "logits")
        self.assertGreaterEqual(cosines[worst], BARS[dtype], f"gradient of {worst}")
        self.assertLessEqual(norms[worst_norm], NORM_BARS[dtype], f"gradient norm of {worst_norm}")
        print(
            f"\n  qwen3_vl {str(dtype).removeprefix('torch.')}, vision {vision_act} (transformers {transformers.__version__}): loss "
            f"{float(want_loss):.6f} -> {float(loss):.6f} (relative delta {delta:.2e}), worst gradient cosine "
            f"{cosines[worst]:.9f} ({worst}), worst norm ratio - 1 {norms[worst_norm]:.2e} ({worst_norm}), "
            f"{len(with_grads)} parameters with gradients, {len(patched)} modules patched, "
            f"opgen ops {sorted(rec.opgen())}; {time.perf_counter() - started:.1f} s",
            flush=True,
        )
        patch.revert(model)
        self.assertEqual(patch.patched_modules(model), {})

    def test_gelu_pytorch_tanh_vision(self):
        self.check("gelu_pytorch_tanh", "gelu_tanh")  # Qwen3-VL's configured vision activation

    def test_gelu_vision(self):
        self.check("gelu", "gelu_erf")

    def test_bfloat16(self):
        self.check("gelu_pytorch_tanh", "gelu_tanh", torch.bfloat16)

    def test_gradient_checkpointing_recomputes_the_patched_layers(self):
        # GRPO training checkpoints the text decoder layers and the vision blocks (both
        # GradientCheckpointingLayer): the backward recomputes each, with the patched forwards
        # (the rewritten decoder-layer and attention forwards keep transformers 5's wrapper).
        def checkpointed(model):
            model.config.use_cache = False
            model.gradient_checkpointing_enable()
            return model

        want_loss, _, want_grads = step(checkpointed(tiny()))
        model = patch.apply_to_qwen3_vl(checkpointed(tiny()))
        with RecordOps() as rec:
            loss, _, grads = step(model)
        layers, blocks = model.config.text_config.num_hidden_layers, model.config.vision_config.depth
        self.assertEqual(rec.ops.count("opgen.add_rms_norm.default"), 2 * layers)
        self.assertEqual(rec.ops.count("opgen.rotary_mul.default"), 2 * 2 * (layers + blocks))  # q, k; twice
        self.assertEqual(rec.ops.count("opgen.layer_norm.default"), 2 * 2 * blocks + 2)  # + the 2 mergers, once
        self.assertLessEqual(abs(float(loss) - float(want_loss)) / float(want_loss), 1e-5, "loss")
        for name in want_grads:
            self.assertGreaterEqual(cosine(grads[name], want_grads[name]), BARS[torch.float32], f"gradient of {name}")
            ratio = abs(float(grads[name].double().norm() / want_grads[name].double().norm()) - 1)
            self.assertLessEqual(ratio, NORM_BARS[torch.float32], f"gradient norm of {name}")
        patch.revert(model)

    def test_a_lost_layer_norm_bias_is_caught(self):
        # A mutant of the patch: the LayerNorm's bias left out (times 0: still in the graph, so
        # the check sees wrong numbers, not a missing gradient). The random biases of tiny() make
        # the loss and the gradients differ: the check must fail.
        original = patch._layer_norm_forward

        def no_bias(self, x):
            y, _, _ = torch.ops.opgen.layer_norm(x, self.weight, self.bias * 0, float(self.eps))
            return y

        patch._layer_norm_forward = no_bias
        try:
            with self.assertRaisesRegex(AssertionError, "loss|gradient"):
                self.check("gelu_pytorch_tanh", "gelu_tanh")
        finally:
            patch._layer_norm_forward = original

    def test_a_wrong_vision_rotary_is_caught(self):
        # A mutant of the vision rotary: the pair swap (mode "interleave") instead of rotate_half.
        # Only the image's positions see it: the check must fail on the loss or a gradient.
        original = patch._vision_rotary

        def interleaved(self, hf, q, k, cos, sin):
            cos, sin = cos.float()[None, :, None], sin.float()[None, :, None]
            return tuple(torch.ops.opgen.rotary_mul(x.float()[None], cos, sin, "interleave")[0].to(x.dtype) for x in (q, k))

        patch._vision_rotary = interleaved
        try:
            with self.assertRaisesRegex(AssertionError, "loss|gradient"):
                self.check("gelu_pytorch_tanh", "gelu_tanh")
        finally:
            patch._vision_rotary = original


if __name__ == "__main__":
    unittest.main(verbosity=2)
