"""The opgen ops under torch.distributed on the CPU backend: two processes over gloo.

FSDP2: a tiny Qwen2 (test_train_qwen.py's config, float32) patched with
opgen_torch.transformers.apply_to_qwen2, each layer and the root `fully_shard`ed, one training
step; the loss and every parameter's full gradient against the unpatched model run the same way
(test_train_qwen.py's float32 bars: loss within 1e-5 relative, each gradient's cosine >= 0.9999
and its norm within 1e-4).

Tensor parallel as transformers does it (`from_pretrained(..., tp_plan="auto")`, the model's own
plan; needs accelerate): the whole tiny Qwen2 and Qwen3, patched against unpatched, one training
step each, the same bars.

Tensor + sequence parallel (torchtitan's plan for a decoder layer's second half):
post_attention_layernorm under SequenceParallel (rows sharded over the sequence), the MLP's
gate/up ColwiseParallel and down RowwiseParallel, all keeping DTensors between them, so that
rms_norm, swiglu and their backward ops run on DTensor inputs through the package's sharding
rules (rms_norm_grad's dgamma a Partial sum over the sequence shards); output and gradients
against the unpatched, unsharded block. A TorchDispatchMode records the opgen ops that ran with
DTensor arguments.

Vocab parallel (Megatron's vocab-parallel log-prob and entropy, rl.vocab_parallel_logprob_entropy):
logits [3, 4, 1003] split 502 | 501 over the ranks, bfloat16 and float32, targets in both
shards, ignore_index rows, temperature 1 and 0.7: every rank's logprob and entropy the same bits,
against the unsplit op and the float64 formula; every shard's gradient gathered against float64
autograd of the formula; two wrong combines (an unweighted entropy sum, the shard's own lse in
the backward) fail those checks. rl.linear_logprob_entropy with the lm_head's rows split the same
way (group=, chunks of 5 tokens): results against the unsplit call and float64, dhidden and the
gathered dweight against float64 autograd; without dhidden's all_reduce it fails.

Usage: PYTHONPATH=<torch-cpu --out DIR> python test_distributed.py [Class or Class.test ...]
(scripts/check_torch_train.sh runs all)
"""

import os
import socket
import sys
import tempfile
import time
import traceback
import unittest

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.utils._python_dispatch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_cpu_backend import autograd_of, logprob_entropy_math, uniform  # noqa: E402
from test_train_qwen import BARS, NORM_BARS, TOKENS, RecordOps, cosine, tiny  # noqa: E402

WORLD = 2


class DTensorOps(torch.utils._python_dispatch.TorchDispatchMode):
    """The opgen ops dispatched with a DTensor argument (a mode sees them before DTensor's
    own dispatch, so the sharding rules are what runs them next)."""

    def __init__(self):
        super().__init__()
        self.ops = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        from torch.distributed.tensor import DTensor

        name = str(func)
        if name.startswith("opgen.") and any(isinstance(a, DTensor) for a in args):
            self.ops.add(name.split(".")[1])
        return func(*args, **(kwargs or {}))


def compare(case, got, want, what):
    """test_train_qwen.py's float32 bars on a tensor: cosine and norm ratio."""
    case.assertGreaterEqual(cosine(got, want), BARS[torch.float32], f"{what}: cosine")
    ratio = abs(float(got.double().norm() / want.double().norm()) - 1)
    case.assertLessEqual(ratio, NORM_BARS[torch.float32], f"{what}: norm ratio")


def compare_steps(case, want, got, ops):
    """A patched training step (loss, {name: gradient}, opgen ops that ran) against the
    unpatched one: `ops` ran, loss within 1e-5 relative, the same parameters, every gradient
    within the float32 bars. Returns the loss's relative delta."""
    (want_loss, want_grads, _), (loss, grads, ran) = want, got
    case.assertTrue(ops <= ran, ran)
    delta = abs(float(loss) - float(want_loss)) / abs(float(want_loss))
    case.assertLessEqual(delta, 1e-5, "loss")
    case.assertEqual(sorted(grads), sorted(want_grads))
    for name in grads:
        compare(case, grads[name], want_grads[name], f"gradient of {name}")
    return delta


def full_tensor(t):
    """The whole tensor of a DTensor, a plain tensor as it is."""
    from torch.distributed.tensor import DTensor

    return t.full_tensor() if isinstance(t, DTensor) else t


def fsdp_step(patched):
    """One FSDP2 training step of the tiny Qwen2: loss, {name: full gradient}, the opgen ops
    that ran."""
    from torch.distributed.fsdp import fully_shard

    import opgen_torch.transformers as patch

    model = tiny("qwen2", torch.float32)
    if patched:
        patch.apply_to_qwen2(model)
    for layer in model.model.layers:
        fully_shard(layer)
    fully_shard(model)
    with RecordOps() as rec:
        out = model(TOKENS, labels=TOKENS)
        out.loss.backward()
    return out.loss.detach(), {n: p.grad.full_tensor() for n, p in model.named_parameters()}, rec.opgen()


def tp_block(mesh, patched):
    """Layer 0's post_attention_layernorm and MLP of the tiny Qwen2; parallelised on `mesh` when
    patched (SequenceParallel norm, colwise gate/up, rowwise down, DTensors throughout)."""
    from torch.distributed.tensor import Replicate, Shard
    from torch.distributed.tensor.parallel import (
        ColwiseParallel,
        PrepareModuleInput,
        RowwiseParallel,
        SequenceParallel,
        parallelize_module,
    )

    import opgen_torch.transformers as patch

    model = tiny("qwen2", torch.float32)
    if patched:
        patch.apply_to_qwen2(model)
    layer = model.model.layers[0]
    block = torch.nn.Sequential(layer.post_attention_layernorm, layer.mlp)
    if patched:
        parallelize_module(
            block,
            mesh,
            {
                "0": SequenceParallel(use_local_output=False),
                "1": PrepareModuleInput(
                    input_layouts=(Shard(1),), desired_input_layouts=(Replicate(),), use_local_output=False
                ),
                "1.gate_proj": ColwiseParallel(use_local_output=False),
                "1.up_proj": ColwiseParallel(use_local_output=False),
                "1.down_proj": RowwiseParallel(
                    input_layouts=Shard(-1), output_layouts=Shard(1), use_local_output=False
                ),
            },
        )
    return block


def tp_step(mesh, patched):
    """Forward and backward of the block on a fixed [1, 12, 64] input (sequence-sharded when
    patched): the full output and {name: full gradient}, the opgen ops seen on DTensors."""
    from torch.distributed.tensor import DTensor, Shard

    block = tp_block(mesh, patched)
    x = torch.randn(1, TOKENS.shape[1], 64, generator=torch.Generator().manual_seed(2))
    if patched:
        x = DTensor.from_local(x.chunk(WORLD, dim=1)[dist.get_rank()], mesh, [Shard(1)])
    with DTensorOps() as seen:
        y = block(x)
        (y * y).sum().backward()
    return full_tensor(y).detach(), {n: full_tensor(p.grad) for n, p in block.named_parameters()}, seen.ops


def own_tp_plan():
    """from_pretrained's keywords for the model's own tensor-parallel plan: DistributedConfig where
    transformers has it (5.x, where the bare `tp_plan=` keyword is deprecated), else `tp_plan=`."""
    try:
        from transformers.distributed import DistributedConfig
    except ImportError:
        return {"tp_plan": "auto"}
    return {"distributed_config": DistributedConfig(tp_plan="auto")}


def transformers_tp_step(mesh, family, patched):
    """One training step of the tiny Qwen2/Qwen3 loaded the way transformers parallelises a
    model itself (`from_pretrained` with its own plan, `tp_plan="auto"`: q/k/v and gate/up
    column-wise, o and down row-wise, local tensors between them, so the norms, rotary and
    SwiGLU run on each rank's heads and columns as plain tensors): loss, {name: full gradient},
    the opgen ops that ran."""
    import transformers

    import opgen_torch.transformers as patch

    # Rank 0 saves the checkpoint (transformers writes it on the main process only), every rank
    # loads its shards from it.
    with tempfile.TemporaryDirectory() as mine:
        saved = [mine]
        dist.broadcast_object_list(saved, src=0)
        if dist.get_rank() == 0:
            tiny(family, torch.float32).save_pretrained(mine)
        dist.barrier()
        model = transformers.AutoModelForCausalLM.from_pretrained(
            saved[0], **own_tp_plan(), device_mesh=mesh, dtype=torch.float32
        )
        dist.barrier()
    if patched:
        getattr(patch, f"apply_to_{family}")(model)
    with RecordOps() as rec:
        out = model(TOKENS, labels=TOKENS)
        out.loss.backward()
    return out.loss.detach(), {n: full_tensor(p.grad) for n, p in model.named_parameters()}, rec.opgen()


class Distributed(unittest.TestCase):
    def setUp(self):
        from torch.distributed.device_mesh import init_device_mesh

        self.mesh = init_device_mesh("cpu", (WORLD,))

    def test_fsdp2_training_step(self):
        started = time.perf_counter()
        want = fsdp_step(patched=False)
        got = fsdp_step(patched=True)
        ops = {"rms_norm", "rms_norm_grad", "add_rms_norm", "swiglu", "swiglu_grad"}
        delta = compare_steps(self, want, got, ops)
        if dist.get_rank() == 0:
            print(
                f"\n  FSDP2 x{WORLD}: loss relative delta {delta:.2e}, {len(got[1])} gradients within the "
                f"float32 bars, opgen ops {sorted(got[2])}; {time.perf_counter() - started:.1f} s",
                flush=True,
            )

    def test_transformers_tensor_parallel_training_step(self):
        # The whole model under transformers' own tensor-parallel plan, Qwen2 and Qwen3 (its q/k
        # norm over each rank's heads), patched against unpatched, both parallelised the same way.
        for family in ("qwen2", "qwen3"):
            with self.subTest(family=family):
                started = time.perf_counter()
                want = transformers_tp_step(self.mesh, family, patched=False)
                got = transformers_tp_step(self.mesh, family, patched=True)
                ops = {"rms_norm", "rms_norm_grad", "rotary_mul", "rotary_mul_grad", "swiglu"}
                delta = compare_steps(self, want, got, ops)
                if dist.get_rank() == 0:
                    print(
                        f"\n  transformers tp_plan=auto x{WORLD}, {family}: loss relative delta {delta:.2e}, "
                        f"{len(got[1])} gradients within the float32 bars, opgen ops {sorted(got[2])}; "
                        f"{time.perf_counter() - started:.1f} s",
                        flush=True,
                    )

    def test_row_and_rotary_rules_shard_without_falling_back(self):
        # Each rule on DTensors against the op on whole tensors (same numbers on every rank),
        # and the placements it chose: a row-sharded output stays sharded (no fallback to
        # replicate), a summed table/gamma gradient is Partial.
        from torch.distributed.tensor import DTensor, Partial, Replicate, Shard, distribute_tensor

        g = torch.Generator().manual_seed(3)
        rand = lambda *shape: torch.randn(*shape, generator=g)  # noqa: E731
        x, r1, r2, dy = rand(2, 6, 4, 16), rand(1, 6, 1, 16), rand(1, 6, 1, 16), rand(2, 6, 4, 16)
        h, h2, gamma, beta, dh = rand(2, 6, 32), rand(2, 6, 32), rand(32) + 1, rand(32), rand(2, 6, 32)
        mean, rstd = torch.ops.opgen.layer_norm(h, gamma, beta)[1:]
        rep = [Replicate()]
        cases = [
            # (op, tensors, their placements, attrs, the outputs' placements)
            ("rotary_mul", (x, r1, r2), ([Shard(1)], [Shard(1)], [Shard(1)]), {}, [[Shard(1)]]),
            ("rotary_mul", (x, r1, r2), ([Shard(2)], rep, rep), {}, [[Shard(2)]]),
            (
                "rotary_mul_grad",
                (dy, x, r1, r2),
                ([Shard(0)], [Shard(0)], rep, rep),
                {"table_grads": True},
                [[Shard(0)], [Partial()], [Partial()]],
            ),
            ("add_rms_norm", (h, h2, gamma), ([Shard(1)], [Shard(1)], rep), {}, [[Shard(1)]] * 3),
            ("layer_norm", (h, gamma, beta), ([Shard(0)], rep, rep), {}, [[Shard(0)]] * 3),
            (
                "layer_norm_grad",
                (dh, h, mean, rstd, gamma),
                ([Shard(1)], [Shard(1)], [Shard(1)], [Shard(1)], rep),
                {},
                [[Shard(1)], [Partial()], [Partial()]],
            ),
        ]
        for name, tensors, placements, attrs, want_placements in cases:
            with self.subTest(op=name, placements=placements):
                op = getattr(torch.ops.opgen, name)
                want = op(*tensors, **attrs)
                want = want if isinstance(want, tuple) else (want,)
                args = [distribute_tensor(t, self.mesh, p) for t, p in zip(tensors, placements)]
                got = op(*args, **attrs)
                got = got if isinstance(got, tuple) else (got,)
                self.assertEqual([list(o.placements) for o in got], want_placements)
                for o, w in zip(got, want):
                    self.assertIsInstance(o, DTensor)
                    torch.testing.assert_close(o.full_tensor(), w, rtol=1e-5, atol=1e-5)

    def test_an_unused_output_on_dtensors_trains(self):
        # add_rms_norm's x_sum unused: its zero gradient must be a DTensor like the others (a
        # plain zeros tensor made the backward op refuse mixed Tensor and DTensor arguments).
        from torch.distributed.tensor import Replicate, Shard, distribute_tensor

        g = torch.Generator().manual_seed(4)
        whole = [torch.randn(2, 6, 32, generator=g), torch.randn(2, 6, 32, generator=g)]
        whole.append(torch.rand(32, generator=g) + 1)

        def grads(placements):
            args = [t.clone().requires_grad_() for t in whole]
            if placements:
                args = [distribute_tensor(t, self.mesh, p) for t, p in zip(args, placements)]
            y = torch.ops.opgen.add_rms_norm(*args)[0]
            (y * y).sum().backward()
            return [t.grad.full_tensor() if placements else t.grad for t in args]

        want = grads(None)
        got = grads(([Shard(1)], [Shard(1)], [Replicate()]))
        for name, o, w in zip(("x1", "x2", "gamma"), got, want):
            torch.testing.assert_close(o, w, rtol=1e-5, atol=1e-5, msg=name)

    def test_a_replicated_dgamma_is_caught(self):
        # A mutant of the sharding rules: the row-gradient ops' dgamma/dbeta Replicate instead of
        # Partial (each rank's sum over its own rows taken as the whole sum). The TP check must
        # fail on gamma's gradient.
        import functools

        import opgen_torch.ops as ops
        from torch.distributed.tensor import Partial, Replicate
        from torch.distributed.tensor.debug import _clear_sharding_prop_cache
        from torch.distributed.tensor.experimental import register_sharding

        def mutant(op, *args, **attrs):
            return [
                ([Replicate() if isinstance(p, Partial) else p for p in out], ins)
                for out, ins in ops.sharding_strategies(op, *args, **attrs)
            ]

        # Both sharding caches, the Python LRU and (torch 2.14) the C++ dispatch fast path's: that
        # one would otherwise keep serving the mutant's strategy to the tests after this one.
        try:
            register_sharding(torch.ops.opgen.rms_norm_grad.default)(functools.partial(mutant, "rms_norm_grad"))
            _clear_sharding_prop_cache()
            with self.assertRaisesRegex(AssertionError, "gradient of 0.weight"):
                self.check_tensor_parallel()
        finally:
            ops.register_sharding()
            _clear_sharding_prop_cache()

    def test_tensor_and_sequence_parallel_block(self):
        self.check_tensor_parallel()

    def check_tensor_parallel(self):
        started = time.perf_counter()
        want_y, want, _ = tp_step(self.mesh, patched=False)
        y, got, seen = tp_step(self.mesh, patched=True)
        self.assertEqual(seen, {"rms_norm", "rms_norm_grad", "swiglu", "swiglu_grad"})
        torch.testing.assert_close(y, want_y, rtol=1e-4, atol=1e-4)
        self.assertEqual(sorted(got), sorted(want))
        for name in got:
            compare(self, got[name], want[name], f"gradient of {name}")
        if dist.get_rank() == 0:
            print(
                f"\n  TP/SP x{WORLD}: opgen ops on DTensors {sorted(seen)}, output and {len(got)} gradients "
                f"within the float32 bars; {time.perf_counter() - started:.1f} s",
                flush=True,
            )


# Vocab-parallel log-prob and entropy: V odd, so the two shards differ in size (502 and 501).
VOCAB, SHARDS = 1003, (0, 502, 1003)
# Targets in both shards, on both sides of the boundary (501 | 502) and at both ends, and
# ignore_index rows; [3, 4] tokens (leading dims).
VOCAB_TARGETS = torch.tensor([[0, 501, 502, 1002], [-100, 17, 800, -100], [333, 650, 999, 2]])
# The unsplit op's bars against the float64 formula (RlLossHelpers'): the float32 op's error at
# |z| <= 8 / 0.7, V ~ 1000 is a few 2^-24·|lse| (~1e-6), well inside 2e-5, which a wrong combine
# (an unweighted entropy sum: off by ~1; the local lse: logprob off by log w ~ 0.7) exceeds by
# far. Split against unsplit: two float32 results each within a few ULPs of |lse| <= 20 of the
# exact value, and the combine's own roundings (logsumexp over 2 ranks, log w, the weighted
# sum) add a few more: 1e-5.
VOCAB_ATOL, SPLIT_ATOL = 2e-5, 1e-5
# Gradients (LogprobEntropyAutograd's bars): 1e-4 absolute (the grad op's float32 bound at
# |z| <= 8 / 0.7, |w| <= 1 is ~3e-5) and one 16-bit rounding of dlogits, 2x: 2^-7 for bfloat16.
VOCAB_GRAD_RTOL = {torch.bfloat16: 2.0**-7, torch.float32: 0.0}
# linear_logprob_entropy's gradients: float32 as RlLossHelpers' chunked test (1e-5: the grad op's
# bound at |z| <= 4 / 0.7 times |w| <= 1 over H = 16 and 1003 rows); bfloat16: dlogits, the
# matmuls and dhidden's sum over the ranks each round to bfloat16 (2^-9 relative each).
LINEAR_GRAD_ATOL = {torch.bfloat16: 1e-3, torch.float32: 1e-5}
LINEAR_GRAD_RTOL = {torch.bfloat16: 2.0**-6, torch.float32: 1e-5}


def vocab_targets(ignore_index):
    """VOCAB_TARGETS with its ignored rows marked `ignore_index`."""
    return VOCAB_TARGETS.masked_fill(VOCAB_TARGETS == -100, ignore_index)


def vocab_parallel_step(dtype, temperature, ignore_index=-100):
    """This rank's shard of seeded [3, 4, 1003] logits through rl.vocab_parallel_logprob_entropy,
    then backward of sum(w1 · logprob + w2 · entropy). Every collective runs before any check
    (a failing rank must not leave the other waiting): returns the whole logits, w1, w2 and every
    rank's (logprob, entropy, shard gradient), gathered."""
    import opgen_torch.rl as rl

    rank = dist.get_rank()
    logits = uniform((3, 4, VOCAB), dtype, 61, -8.0, 8.0)
    w1, w2 = uniform((3, 4), torch.float32, 62, -1, 1), uniform((3, 4), torch.float32, 63, -1, 1)
    shard = logits[..., SHARDS[rank] : SHARDS[rank + 1]].clone().requires_grad_()
    lp, ent = rl.vocab_parallel_logprob_entropy(
        shard, vocab_targets(ignore_index), SHARDS[rank], temperature=temperature, ignore_index=ignore_index
    )
    (w1 * lp + w2 * ent).sum().backward()
    ranks = [None] * WORLD
    dist.all_gather_object(ranks, (lp.detach(), ent.detach(), shard.grad))
    return logits, w1, w2, ranks


def print_worst(label, errors):
    """Rank 0 prints a case's largest errors against float64 ({what: max |error|})."""
    if dist.get_rank() == 0:
        worst = ", ".join(f"{k} {v:.1e}" for k, v in errors.items())
        print(f"\n  {label}: max |error| against float64: {worst}", flush=True)


class VocabParallel(unittest.TestCase):
    def check(self, dtype, temperature, ignore_index=-100):
        """vocab_parallel_step's results against the unsplit op and the float64 formula, and the
        gathered shard gradients against float64 autograd of the formula; the worst errors
        (against float64 unless named `vs unsplit`)."""
        logits, w1, w2, ranks = vocab_parallel_step(dtype, temperature, ignore_index)
        target = vocab_targets(ignore_index)
        lp, ent, _ = ranks[dist.get_rank()]
        for r, (lp_r, ent_r, _) in enumerate(ranks):
            self.assertTrue(torch.equal(lp_r, lp) and torch.equal(ent_r, ent), f"rank {r}'s results differ")
        self.assertEqual((lp.shape, lp.dtype, ent.shape, ent.dtype), ((3, 4), torch.float32, (3, 4), torch.float32))
        rows = logits.reshape(-1, VOCAB)
        unsplit = torch.ops.opgen.logprob_entropy(rows, target.reshape(-1), temperature, ignore_index)
        gold = logprob_entropy_math(logits.double(), target, temperature, ignore_index)
        errors = {}
        for what, got, op, want in zip(("logprob", "entropy"), (lp, ent), unsplit, gold):
            torch.testing.assert_close(
                got, op.view(3, 4), atol=SPLIT_ATOL, rtol=0, msg=lambda m, w=what: f"{w} against the unsplit op: {m}"
            )
            torch.testing.assert_close(
                got.double(), want, atol=VOCAB_ATOL, rtol=0, msg=lambda m, w=what: f"{w} against float64: {m}"
            )
            errors[what] = float((got.double() - want).abs().max())
            errors[f"{what} vs unsplit"] = float((got - op.view(3, 4)).abs().max())
        self.assertEqual((lp[1, 0].item(), ent[1, 3].item()), (0.0, 0.0), "ignore_index rows")
        grad = torch.cat([g for _, _, g in ranks], dim=-1)
        self.assertEqual((grad.dtype, grad.shape), (dtype, logits.shape))
        want = autograd_of(
            lambda x: logprob_entropy_math(x, target, temperature, ignore_index), torch.float64, [w1, w2], logits
        )[0]
        torch.testing.assert_close(
            grad.double(), want, atol=1e-4, rtol=VOCAB_GRAD_RTOL[dtype], msg=lambda m: f"gradient: {m}"
        )
        errors["gradient"] = float((grad.double() - want).abs().max())
        return errors

    def test_split_vocabulary_matches_the_unsplit_op_and_the_formula(self):
        # ignore_index -1 once: another shard's target must then be mapped to an index other than -1.
        cases = (
            (torch.float32, 1.0, -100),
            (torch.bfloat16, 1.0, -100),
            (torch.float32, 0.7, -100),
            (torch.float32, 1.0, -1),
        )
        for dtype, temperature, ignore_index in cases:
            with self.subTest(dtype=dtype, temperature=temperature, ignore_index=ignore_index):
                errors = self.check(dtype, temperature, ignore_index)
                print_worst(f"vocab parallel x{WORLD} {dtype} T={temperature} ignore_index={ignore_index}", errors)

    def test_wrong_combines_fail(self):
        # Two mutants of the combine, each must fail the check: the shards' entropies summed
        # without their weights w_s and -log w_s; and the backward given this shard's own lse
        # instead of the whole vocabulary's (the forward's results right, the gradients not).
        import opgen_torch.rl as rl

        real = rl._combine_vocab_partials

        def unweighted(part, keep, group, world):
            lp, _, lse = real(part, keep, group, world)
            total = part[:, 1].clone()
            dist.all_reduce(total, group=group)
            return lp, torch.where(keep, total, 0.0), lse

        def local_lse(part, keep, group, world):
            lp, ent, _ = real(part, keep, group, world)
            return lp, ent, part[:, 0]

        for mutant, failure in ((unweighted, "^entropy against the unsplit op"), (local_lse, "^gradient")):
            with self.subTest(mutant=mutant.__name__):
                try:
                    rl._combine_vocab_partials = mutant
                    with self.assertRaisesRegex(AssertionError, failure):
                        self.check(torch.float32, 1.0)
                finally:
                    rl._combine_vocab_partials = real

    def test_a_target_in_no_shard_gives_nan(self):
        # As the unsplit op gives for a target outside [0, V): logprob NaN, the entropy right.
        import opgen_torch.rl as rl

        rank = dist.get_rank()
        logits = uniform((2, VOCAB), torch.float32, 64, -8.0, 8.0)
        target = torch.tensor([VOCAB, -5])
        lp, ent = rl.vocab_parallel_logprob_entropy(
            logits[:, SHARDS[rank] : SHARDS[rank + 1]], target, SHARDS[rank]
        )
        self.assertTrue(lp.isnan().all(), lp)
        want = logprob_entropy_math(logits.double(), torch.zeros(2, dtype=torch.int64), 1.0, -100)[1]
        torch.testing.assert_close(ent.double(), want, atol=VOCAB_ATOL, rtol=0)

    def linear_step(self, dtype, temperature):
        """rl.linear_logprob_entropy with lm_head_weight [1003, 16] split by rows 502 | 501 over
        the ranks (chunks of 5 of the 12 tokens: the last one 2), then backward of
        sum(w1 · logprob + w2 · entropy): every rank's results and gradients, gathered, and the
        unsplit call's results on this rank."""
        import opgen_torch.rl as rl

        rank = dist.get_rank()
        hidden, weight = uniform((3, 4, 16), dtype, 65, -1, 1), uniform((VOCAB, 16), dtype, 66, -1, 1)
        w1, w2 = uniform((3, 4), torch.float32, 62, -1, 1), uniform((3, 4), torch.float32, 63, -1, 1)
        h = hidden.clone().requires_grad_()
        shard = weight[SHARDS[rank] : SHARDS[rank + 1]].clone().requires_grad_()
        lp, ent = rl.linear_logprob_entropy(
            h, shard, VOCAB_TARGETS, chunk=5, temperature=temperature, group=dist.group.WORLD,
            vocab_start_index=SHARDS[rank],
        )
        (w1 * lp + w2 * ent).sum().backward()
        ranks = [None] * WORLD
        dist.all_gather_object(ranks, (lp.detach(), ent.detach(), h.grad, shard.grad))
        unsplit = rl.linear_logprob_entropy(hidden, weight, VOCAB_TARGETS, chunk=5, temperature=temperature)
        return hidden, weight, w1, w2, ranks, unsplit

    def check_linear(self, dtype, temperature):
        hidden, weight, w1, w2, ranks, unsplit = self.linear_step(dtype, temperature)
        lp, ent, dhidden, _ = ranks[dist.get_rank()]
        for r, (lp_r, ent_r, dh_r, _) in enumerate(ranks):
            self.assertTrue(all(map(torch.equal, (lp_r, ent_r, dh_r), (lp, ent, dhidden))), f"rank {r} differs")

        def math(x, w):
            # The logits rounded to the dtype as the lm_head's matmul gives them (exact in float32
            # accumulation, one rounding), then the float64 formula.
            return logprob_entropy_math((x @ w.t()).to(dtype).double(), VOCAB_TARGETS, temperature, -100)

        gold = math(hidden.double(), weight.double())
        errors = {}
        for what, got, op, want in zip(("logprob", "entropy"), (lp, ent), unsplit, gold):
            torch.testing.assert_close(
                got, op, atol=SPLIT_ATOL, rtol=0, msg=lambda m, w=what: f"{w} against the unsplit call: {m}"
            )
            torch.testing.assert_close(
                got.double(), want, atol=VOCAB_ATOL, rtol=0, msg=lambda m, w=what: f"{w} against float64: {m}"
            )
            errors[what] = float((got.double() - want).abs().max())
        gold_h, gold_w = autograd_of(math, torch.float64, [w1, w2], hidden, weight)
        dweight = torch.cat([dw for *_, dw in ranks])
        for what, got, want in (("dhidden", dhidden, gold_h), ("dweight", dweight, gold_w)):
            self.assertEqual((got.dtype, got.shape), (dtype, want.shape), what)
            torch.testing.assert_close(
                got.double(), want, atol=LINEAR_GRAD_ATOL[dtype], rtol=LINEAR_GRAD_RTOL[dtype],
                msg=lambda m, w=what: f"{w}: {m}",
            )
            errors[what] = float((got.double() - want).abs().max())
        return errors

    def test_linear_logprob_entropy_with_a_split_lm_head(self):
        for dtype, temperature in ((torch.float32, 1.0), (torch.bfloat16, 1.0), (torch.float32, 0.7)):
            with self.subTest(dtype=dtype, temperature=temperature):
                errors = self.check_linear(dtype, temperature)
                print_worst(f"linear vocab parallel x{WORLD} {dtype} T={temperature}", errors)

    def test_linear_without_the_dhidden_all_reduce_fails(self):
        # A mutant: each rank keeps its own columns' share of dhidden (no all_reduce); the ranks'
        # dhidden then differ, the first check to fail.
        real = dist.all_reduce
        try:
            dist.all_reduce = lambda *args, **kwargs: None
            with self.assertRaisesRegex(AssertionError, "rank \\d differs"):
                self.check_linear(torch.float32, 1.0)
        finally:
            dist.all_reduce = real

def worker(rank, port, results, names):
    # LOCAL_RANK as torchrun sets it (transformers' tp_plan reads it).
    os.environ.update(
        MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(WORLD)
    )
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=WORLD)
    try:
        import opgen_torch  # noqa: F401  (registers the ops and their sharding rules)

        # The test classes or methods named on the command line (`VocabParallel`,
        # `Distributed.test_fsdp2_training_step`), else all of them.
        loader = unittest.defaultTestLoader
        suite = loader.loadTestsFromNames(names or ["Distributed", "VocabParallel"], sys.modules[__name__])
        stream = sys.stderr if rank == 0 else open(os.devnull, "w")
        result = unittest.TextTestRunner(stream=stream, verbosity=2).run(suite)
        with open(os.path.join(results, str(rank)), "w") as f:
            f.write("ok" if result.wasSuccessful() else "failed")
    except Exception:
        traceback.print_exc()
    finally:
        dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as results:
        mp.spawn(worker, args=(free_port(), results, sys.argv[1:]), nprocs=WORLD, join=True)
        files = {r: os.path.join(results, str(r)) for r in range(WORLD)}
        outcome = {r: open(f).read() if os.path.exists(f) else "crashed" for r, f in files.items()}
    print(f"ranks: {outcome}")
    sys.exit(0 if all(v == "ok" for v in outcome.values()) else 1)
