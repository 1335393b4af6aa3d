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

Usage: PYTHONPATH=<torch-cpu --out DIR> python test_distributed.py   (scripts/check_torch_train.sh)
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


def worker(rank, port, results):
    # LOCAL_RANK as torchrun sets it (transformers' tp_plan reads it).
    os.environ.update(
        MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(WORLD)
    )
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=WORLD)
    try:
        import opgen_torch  # noqa: F401  (registers the ops and their sharding rules)

        suite = unittest.defaultTestLoader.loadTestsFromTestCase(Distributed)
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
        mp.spawn(worker, args=(free_port(), results), nprocs=WORLD, join=True)
        files = {r: os.path.join(results, str(r)) for r in range(WORLD)}
        outcome = {r: open(f).read() if os.path.exists(f) else "crashed" for r, f in files.items()}
    print(f"ranks: {outcome}")
    sys.exit(0 if all(v == "ok" for v in outcome.values()) else 1)
