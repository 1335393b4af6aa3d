"""One training step of a tiny random Qwen2 and Qwen3 (built from a config: no download) with
opgen_torch.transformers' patches against the unpatched model, on the CPU backend (the generated
kernels on the twin): issue 13's "Done when".

Per family and dtype (float32, bfloat16): loss, logits and every parameter's gradient, patched vs
unpatched — float32: loss within 1e-5 relative, logits within 1e-4, each gradient's cosine
>= 0.9999 and its norm within 1e-4; bfloat16: each gradient's cosine >= 0.98 and its norm within
20 %, the logits' cosine >= 0.999 — no parameter
without a gradient, the opgen forward and backward ops recorded as dispatched (a
TorchDispatchMode below autograd sees the backward's ops too), and greedy `generate` giving the
same tokens (float32); the float32 step again under torch.compile: aot_eager (Qwen2) and
inductor (Qwen2 and Qwen3), the whole patched model;
two mutants of the generated glue that the check must catch. Prints the figures: loss delta, worst gradient cosine and its parameter,
time.

Usage: PYTHONPATH=<torch-cpu --out DIR> python test_train_qwen.py   (scripts/check_torch_train.sh)
"""

import os
import time
import unittest

import torch
import torch.utils._python_dispatch

import opgen_torch
import opgen_torch.transformers as patch

TOKENS = torch.tensor([[3, 17, 99, 5, 64, 2, 8, 120, 33, 71, 12, 90]])


class RecordOps(torch.utils._python_dispatch.TorchDispatchMode):
    """Every op dispatched below autograd (forward and backward) while active."""

    def __init__(self):
        super().__init__()
        self.ops = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops.append(str(func))
        return func(*args, **(kwargs or {}))

    def opgen(self):
        return {op.split(".")[1] for op in self.ops if op.startswith("opgen.")}


def tiny(family, dtype):
    """hidden 64, 2 layers, 4 heads, 2 kv heads, head_dim 16, vocab 128;
    random norm weights (ones would hide a weight that is not applied)."""
    import transformers

    torch.manual_seed(0)
    common = dict(
        vocab_size=128,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
        attn_implementation="eager",
    )
    if family == "qwen2":
        model = transformers.Qwen2ForCausalLM(transformers.Qwen2Config(**common))
    else:
        model = transformers.Qwen3ForCausalLM(transformers.Qwen3Config(head_dim=16, **common))
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.copy_(torch.rand(p.shape, generator=g) + 0.5)
    return model.to(dtype).train()


def step(model):
    """One training step's forward and backward: loss, logits, {parameter: gradient}."""
    model.zero_grad(set_to_none=True)
    out = model(TOKENS, labels=TOKENS)
    out.loss.backward()
    return out.loss.detach(), out.logits.detach(), {n: p.grad for n, p in model.named_parameters()}


def cosine(a, b):
    a, b = a.double().flatten(), b.double().flatten()
    return float(torch.dot(a, b) / (a.norm() * b.norm()).clamp_min(1e-300))


BARS = {torch.float32: 0.9999, torch.bfloat16: 0.98}
# |norm(patched) / norm(unpatched) - 1|: float32 as the logits' 1e-4; bfloat16 sqrt(2 (1 - 0.98)),
# the relative size of the difference the cosine bar allows, in the other direction.
NORM_BARS = {torch.float32: 1e-4, torch.bfloat16: 0.2}


class TrainingStep(unittest.TestCase):
    def check(self, family, dtype, generate=True):
        apply = {"qwen2": patch.apply_to_qwen2, "qwen3": patch.apply_to_qwen3}[family]
        started = time.perf_counter()
        want_loss, want_logits, want_grads = step(tiny(family, dtype))
        model = apply(tiny(family, dtype))
        kinds = set(patch.patched_modules(model).values())
        self.assertEqual(kinds, {"rms_norm", "swiglu", "add_rms_norm", "rotary_mul"})
        with RecordOps() as rec:
            loss, logits, grads = step(model)

        # Which opgen ops really ran, forward and backward.
        rotary_trains = "rotary_mul" in opgen_torch.ops.BACKWARD
        expected = {"rms_norm", "add_rms_norm", "swiglu", "rms_norm_grad", "add_rms_norm_grad", "swiglu_grad"}
        if rotary_trains:
            expected |= {"rotary_mul", opgen_torch.ops.BACKWARD["rotary_mul"]}
        self.assertEqual(rec.opgen(), expected)

        # Every parameter has its gradient, and each points where the unpatched one does.
        self.assertEqual(sorted(grads), sorted(want_grads))
        lost = [n for n, g in grads.items() if g is None and want_grads[n] is not None]
        self.assertEqual(lost, [], "parameters without a gradient")
        cosines = {n: cosine(grads[n], want_grads[n]) for n in grads}
        worst = min(cosines, key=cosines.get)
        # The cosine does not see a gradient's scale (2x the gradient has cosine 1): the norms
        # must agree too, to the bar the cosine sets (1 - cos ~ angle^2 / 2).
        norms = {n: abs(float(grads[n].double().norm() / want_grads[n].double().norm()) - 1) for n in grads}
        worst_norm = max(norms, key=norms.get)
        self.assertLessEqual(norms[worst_norm], NORM_BARS[dtype], f"gradient norm of {worst_norm}")
        delta = abs(float(loss) - float(want_loss)) / abs(float(want_loss))
        if dtype == torch.float32:
            self.assertLessEqual(delta, 1e-5, "loss")
            torch.testing.assert_close(logits, want_logits, rtol=1e-4, atol=1e-4)
        else:
            self.assertGreaterEqual(cosine(logits, want_logits), 0.999, "logits")
        self.assertGreaterEqual(cosines[worst], BARS[dtype], f"gradient of {worst}")

        # Greedy generation (no grad: rotary_mul runs in "auto" mode) gives the same tokens.
        generated = ""
        if dtype == torch.float32 and generate:
            model.eval()
            with torch.no_grad(), RecordOps() as gen_rec:
                got = model.generate(TOKENS, max_new_tokens=8, do_sample=False)
            self.assertIn("rotary_mul", gen_rec.opgen())
            want = tiny(family, dtype).eval().generate(TOKENS, max_new_tokens=8, do_sample=False)
            self.assertEqual(got.tolist(), want.tolist())
            generated = f", generate: {got.shape[1] - TOKENS.shape[1]} tokens equal"
        import transformers

        print(
            f"\n  {family} {str(dtype).removeprefix('torch.')} (transformers {transformers.__version__}): loss {float(want_loss):.6f} -> {float(loss):.6f} "
            f"(relative delta {delta:.2e}), worst gradient cosine {cosines[worst]:.9f} ({worst}), "
            f"worst norm ratio - 1 {norms[worst_norm]:.2e} ({worst_norm}), "
            f"{len(grads)} parameters with gradients, opgen ops {sorted(rec.opgen())}, "
            f"rotary in training: {'rotary_mul' if rotary_trains else 'HF (rotary_mul has no backward op yet)'}"
            f"{generated}; {time.perf_counter() - started:.1f} s",
            flush=True,
        )
        patch.revert(model)
        self.assertEqual(patch.patched_modules(model), {})

    def test_qwen2_float32(self):
        self.check("qwen2", torch.float32)

    def test_qwen2_bfloat16(self):
        self.check("qwen2", torch.bfloat16)

    def test_qwen3_float32(self):
        self.check("qwen3", torch.float32)

    def test_qwen3_bfloat16(self):
        self.check("qwen3", torch.bfloat16)

    def test_a_broken_backward_glue_is_caught(self):
        # Mutants of the generated autograd glue (opgen_torch.ops._outgoing, which every backward
        # formula calls): gradients 0.1 % too large (cosine 1: only the norm check sees it),
        # and gamma's gradient dropped (a parameter without a gradient). The check must fail on
        # both, for that reason.
        original = opgen_torch.ops._outgoing
        mutants = {
            "scaled": (lambda grad, meta: original(grad, meta) * 1.001, "gradient norm of"),
            "no dgamma": (lambda grad, meta: original(grad, meta) if len(meta[0]) > 1 else None, "without a gradient"),
        }
        try:
            for name, (mutant, why) in mutants.items():
                with self.subTest(mutant=name):
                    opgen_torch.ops._outgoing = mutant
                    with self.assertRaisesRegex(AssertionError, why):
                        self.check("qwen2", torch.float32, generate=False)
        finally:
            opgen_torch.ops._outgoing = original

    def test_forced_rotary_trains_only_with_its_backward_op(self):
        model = patch.apply_to_qwen2(tiny("qwen2", torch.float32), rotary=True)
        if "rotary_mul" in opgen_torch.ops.BACKWARD:
            step(model)
        else:
            with self.assertRaisesRegex(RuntimeError, "opgen::rotary_mul: input `x` requires grad"):
                step(model)

    def test_compiled_training_step(self):
        # torch.compile of the whole patched model's training step (where the field report lost
        # 26 of 27 gradients silently): aot_eager on Qwen2, inductor on Qwen2 and Qwen3 (the
        # opgen ops are opaque to inductor; it compiles HF's attention, projections and loss
        # around them). The float32 bars: loss within 1e-5 relative, every gradient, each
        # cosine >= 0.9999 and norm within 1e-4, the opgen forward and backward ops dispatched.
        for family, backend in (("qwen2", "aot_eager"), ("qwen2", "inductor"), ("qwen3", "inductor")):
            with self.subTest(family=family, backend=backend):
                torch._dynamo.reset()
                started = time.perf_counter()
                apply = {"qwen2": patch.apply_to_qwen2, "qwen3": patch.apply_to_qwen3}[family]
                want_loss, _, want_grads = step(tiny(family, torch.float32))
                model = apply(tiny(family, torch.float32))
                compiled = torch.compile(model, backend=backend)
                model.zero_grad(set_to_none=True)
                with RecordOps() as rec:
                    loss = compiled(TOKENS, labels=TOKENS).loss
                    loss.backward()
                grads = {n: p.grad for n, p in model.named_parameters()}
                self.assertEqual([n for n, g in grads.items() if g is None], [])
                delta = abs(float(loss.detach()) - float(want_loss)) / float(want_loss)
                self.assertLessEqual(delta, 1e-5)
                cosines = {n: cosine(grads[n], want_grads[n]) for n in grads}
                worst = min(cosines, key=cosines.get)
                self.assertGreaterEqual(cosines[worst], BARS[torch.float32], f"gradient of {worst}")
                norms = {n: abs(float(grads[n].double().norm() / want_grads[n].double().norm()) - 1) for n in grads}
                self.assertLessEqual(max(norms.values()), NORM_BARS[torch.float32])
                expected = {"rms_norm", "add_rms_norm", "swiglu", "rms_norm_grad", "add_rms_norm_grad", "swiglu_grad"}
                if "rotary_mul" in opgen_torch.ops.BACKWARD:  # "auto" trains rotary_mul with its backward op
                    expected |= {"rotary_mul", opgen_torch.ops.BACKWARD["rotary_mul"]}
                self.assertEqual(rec.opgen(), expected)
                print(
                    f"\n  compiled ({backend}) {family} float32: loss relative delta {delta:.2e}, worst gradient "
                    f"cosine {cosines[worst]:.9f} ({worst}), worst norm ratio - 1 {max(norms.values()):.2e}, "
                    f"opgen ops {sorted(rec.opgen())}; {time.perf_counter() - started:.1f} s",
                    flush=True,
                )

    def test_a_forward_of_another_structure_is_refused(self):
        # fuse_residual and rotary edit the installed transformers' own forwards (no copy of a
        # version's is kept): where a forward lacks what the edit replaces, apply_to_* refuses,
        # naming the class, its file and what it looked for, and leaves the model unpatched.
        from transformers.models.qwen2 import modeling_qwen2 as m

        class SumFirst(m.Qwen2DecoderLayer):
            def forward(self, hidden_states, *args, **kwargs):
                residual = hidden_states
                hidden_states, _ = self.self_attn(self.input_layernorm(hidden_states), *args, **kwargs)
                hidden_states = hidden_states + residual  # the operands swapped
                residual = hidden_states
                hidden_states = self.post_attention_layernorm(hidden_states)
                return residual + self.mlp(hidden_states)

        class OwnRotary(m.Qwen2Attention):
            def forward(self, hidden_states, position_embeddings, *args, **kwargs):
                return torch.nn.functional.dropout(hidden_states, 0.0), None  # calls no apply_rotary_pos_emb

        fuse_refusal = (
            "fuse_residual replaces the statements .*hidden_states = residual \\+ hidden_states.* "
            "of SumFirst.forward \\(.*test_train_qwen.py\\).* 0 times; pass fuse_residual=False"
        )
        rotary_refusal = (
            "rotary replaces the apply_rotary_pos_emb\\(...\\) call of OwnRotary.forward \\(.*test_train_qwen.py\\).*"
            "pass rotary=False"
        )
        cases = (
            (SumFirst, "layers", fuse_refusal, "fuse_residual"),
            (OwnRotary, "self_attn", rotary_refusal, "rotary"),
        )
        for cls, where, message, switch in cases:
            with self.subTest(cls=cls.__name__):
                model = tiny("qwen2", torch.float32)
                for layer in model.model.layers:
                    module = layer if where == "layers" else layer.self_attn
                    module.__class__ = cls
                with self.assertRaisesRegex(ValueError, message):
                    patch.apply_to_qwen2(model)
                self.assertEqual(patch.patched_modules(model), {})
                patch.apply_to_qwen2(model, **{switch: False})
                off = {"fuse_residual": "add_rms_norm", "rotary": "rotary_mul"}[switch]
                left = {"rms_norm", "swiglu", "add_rms_norm", "rotary_mul"} - {off}
                self.assertEqual(set(patch.patched_modules(model).values()), left)
                patch.revert(model)

    def test_gradient_checkpointing_recomputes_the_patched_layers(self):
        # RL training checkpoints the decoder layers. transformers 5 does it by wrapping each layer
        # class's forward (GradientCheckpointingLayer.__init_subclass__), which the fuse_residual
        # rewrite must keep: the backward recomputes every layer (add_rms_norm twice per layer,
        # once without checkpointing), and the gradients are the unpatched checkpointed model's
        # within the float32 bars.
        def checkpointed(model):
            model.config.use_cache = False
            model.gradient_checkpointing_enable()
            return model

        want_loss, _, want_grads = step(checkpointed(tiny("qwen2", torch.float32)))
        model = patch.apply_to_qwen2(checkpointed(tiny("qwen2", torch.float32)))
        with RecordOps() as rec:
            loss, _, grads = step(model)
        self.assertEqual(rec.ops.count("opgen.add_rms_norm.default"), 2 * len(model.model.layers))
        self.assertLessEqual(abs(float(loss) - float(want_loss)) / float(want_loss), 1e-5, "loss")
        for name in want_grads:
            self.assertGreaterEqual(cosine(grads[name], want_grads[name]), BARS[torch.float32], f"gradient of {name}")
            ratio = abs(float(grads[name].double().norm() / want_grads[name].double().norm()) - 1)
            self.assertLessEqual(ratio, NORM_BARS[torch.float32], f"gradient norm of {name}")
        patch.revert(model)

    def test_transformers_version(self):
        # scripts/check_torch_train.sh runs part of this file again with another transformers
        # (OPGEN_EXPECT_TRANSFORMERS names it): the run must really use that version.
        import transformers

        want = os.environ.get("OPGEN_EXPECT_TRANSFORMERS")
        if want:
            self.assertEqual(transformers.__version__, want)
        print(f"\n  transformers {transformers.__version__}", flush=True)

    def test_rotary_with_a_batch_of_positions(self):
        # Two sequences with their own positions: HF's cos/sin are [2, S, D], so rotary_mul gets
        # per-batch tables ([2, 1, S, D] for q/k [2, H, S, D]).
        tokens = torch.cat([TOKENS, TOKENS.flip(1)])
        positions = torch.stack([torch.arange(12), torch.arange(12) + 5])
        for family, apply in (("qwen2", patch.apply_to_qwen2), ("qwen3", patch.apply_to_qwen3)):
            with self.subTest(family=family), torch.no_grad():
                want = tiny(family, torch.float32).eval()(tokens, position_ids=positions).logits
                model = apply(tiny(family, torch.float32).eval(), rotary=True)
                with RecordOps() as rec:
                    got = model(tokens, position_ids=positions).logits
                self.assertIn("rotary_mul", rec.opgen())
                torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)

    def test_revert_restores_hf(self):
        model = tiny("qwen3", torch.float32)
        with torch.no_grad():
            want = model(TOKENS).logits
            patch.apply_to_qwen3(model)
            patch.revert(model)
            with RecordOps() as rec:
                again = model(TOKENS).logits
        self.assertEqual(rec.opgen(), set())
        self.assertTrue(torch.equal(again, want))


if __name__ == "__main__":
    unittest.main(verbosity=2)
