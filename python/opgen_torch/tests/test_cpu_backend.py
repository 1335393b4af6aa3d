"""Tests of the generated `opgen_torch` package's CPU backend (`cargo xtask torch-cpu`) in a
real PyTorch: the generated kernels and op_host code running on the CPU twin.

- every op passes torch.library.opcheck (schema, fake tensors, autograd registration,
  aot_dispatch with dynamic shapes);
- each forward op's output against a torch implementation of the same math written here in
  float64 from the rounded inputs (never from the kernels or the specs), with the project's bars:
  16-bit outputs of computing ops within 1 ULP of the once-rounded float64 value, float32
  outputs the CANN standard (MERE < 2^-13, MARE < 10 * 2^-13), layout ops bit-exact, int8 +-1;
- the shapes the generated op_host code refuses (host_refusals.txt: rotary tables that do not
  broadcast, a key/cache head-dim mismatch...), the CPU kernel (the twin-compiled op_host) and
  the Meta kernel under FakeTensorMode refuse with the file's message, word for word;
- the same refusals under torch.compile(dynamic=True, fullgraph=True) fail while tracing (the
  op_host's checks over symbolic sizes) with the eager call's message, valid calls of five
  families run at two sizes of a dynamic dim from one compiled frame (no specialisation), and
  that frame's guards keep the op_host's conditions (an odd head dim is traced and refused);
- a kernel that breaks a twin rule raises a RuntimeError naming the op and the rule, and the
  process goes on (a mutant kernel library replaces one of the build's);
- an op without a backward op raises a clear error naming the op and the input when an input
  requires grad, eagerly and under torch.compile(backend="aot_eager"); never a None gradient;
- the row norms' gradients (rms_norm_grad, add_rms_norm_grad through their [backward] tables)
  against torch autograd of the float64 math with CANN's dual-baseline gate (the dtype's torch
  autograd as the baseline), eagerly, compiled (aot_eager, inductor) and functionalized;
  rotary_mul's (rotary_mul_grad: x's gradient, and the tables' when they require grad) the same
  way, both modes.

Usage: PYTHONPATH=<torch-cpu --out DIR> python test_cpu_backend.py
"""

import math
import unittest

import torch
import torch.utils._python_dispatch
from torch._subclasses.fake_tensor import FakeTensorMode

import opgen_torch  # noqa: F401  (registers torch.ops.opgen)

OPS = torch.ops.opgen
FLOATS = (torch.float16, torch.bfloat16, torch.float32)
# CANN's float32 accuracy standard (research/op-semantics.md): MERE < T, MARE < 10 T.
F32_T = 2.0**-13


def gen(seed):
    return torch.Generator().manual_seed(seed)


def uniform(shape, dtype, seed, lo=-5.0, hi=5.0):
    """Uniform in [lo, hi], rounded to dtype: the gold is computed from these rounded values."""
    return (torch.rand(shape, generator=gen(seed), dtype=torch.float64) * (hi - lo) + lo).to(dtype)


def ordered(t):
    """The float's bits as integers ordered like the values (for ULP distances)."""
    bits = {torch.float16: torch.int16, torch.bfloat16: torch.int16, torch.float32: torch.int32}[t.dtype]
    i = t.contiguous().view(bits).to(torch.int64)
    top = 1 << (8 * t.element_size() - 1)
    return torch.where(i < 0, -(i + top), i)


def ulp_distance(a, b):
    return (ordered(a) - ordered(b)).abs()


def check_close(test, name, got, gold64):
    """The project's bar for one output: `gold64` is the float64 value of the math."""
    test.assertEqual(got.shape, gold64.shape, name)
    if got.dtype in (torch.float16, torch.bfloat16):
        want = gold64.to(got.dtype)
        worst = int(ulp_distance(got, want).max()) if got.numel() else 0
        test.assertLessEqual(worst, 1, f"{name}: {worst} ULP from the once-rounded float64 value")
    elif got.dtype == torch.float32:
        g = got.double()
        rel = (g - gold64).abs() / gold64.abs().clamp_min(1e-30)
        # Near zero the relative error means nothing: CANN's standard takes those as absolute.
        rel = torch.where(gold64.abs() < 1e-6, (g - gold64).abs(), rel)
        mere, mare = float(rel.mean()), float(rel.max())
        test.assertLess(mere, F32_T, f"{name}: MERE {mere:.3g}")
        test.assertLess(mare, 10 * F32_T, f"{name}: MARE {mare:.3g}")
    else:
        test.assertTrue(torch.equal(got, gold64.to(got.dtype)), name)


# ---- the math, in float64 ---------------------------------------------------------------------


def rms_norm_gold(x, gamma, eps):
    x = x.double()
    dims = tuple(range(x.dim() - gamma.dim(), x.dim()))
    rstd = torch.rsqrt(x.pow(2).mean(dim=dims, keepdim=True) + eps)
    return x * rstd * gamma.double(), rstd


def rotate(x, mode):
    if mode == "half":
        a, b = x.chunk(2, dim=-1)
        return torch.cat((-b, a), dim=-1)
    pairs = x.unflatten(-1, (-1, 2))
    return torch.stack((-pairs[..., 1], pairs[..., 0]), dim=-1).flatten(-2)


def gelu_tanh_gold(x):
    x = x.double()
    return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))


def gelu_erf_gold(x):
    x = x.double()
    return 0.5 * x * (1 + torch.erf(x / math.sqrt(2)))


def fast_gelu_gold(x):
    x = x.double()
    return x * torch.sigmoid(1.702 * x)


def swiglu_gold(g, u):
    g = g.double()
    return g * torch.sigmoid(g) * u.double()


def grad_gold(forward, dy, *inputs):
    """dy · ∂forward/∂input for each input, by torch autograd of the float64 formula (the math,
    not the generated backward op)."""
    xs = [t.double().requires_grad_() for t in inputs]
    y = forward(*xs)
    return torch.autograd.grad(y, xs, grad_outputs=dy.double())


def cache_gold(key, cache, slots):
    """key [T, N, D] scattered into cache [NB, BS, N, D] at slots, the later token winning;
    negative slots skipped, slots past the cache counted."""
    out = cache.clone()
    flat = out.view(-1, *cache.shape[2:])
    past = 0
    for t, s in enumerate(slots.tolist()):
        if s < 0:
            continue
        if s >= flat.shape[0]:
            past += 1
            continue
        flat[s] = key[t]
    return out, past


def quantize_gold(x):
    """Per-row symmetric int8: scale = absmax / 127 (float32 division), q = rne(x * 127 / absmax)."""
    xf = x.float()
    absmax = xf.abs().amax(dim=-1)
    scale = absmax / 127
    q = torch.where(absmax[..., None] > 0, xf.double() * 127 / absmax.double()[..., None], torch.zeros((), dtype=torch.float64))
    return torch.round(q).clamp(-127, 127).to(torch.int8), scale


# ---- sample arguments of every op, for opcheck ------------------------------------------------


def samples(dtype=torch.float32, seed=1):
    x = uniform((3, 40), dtype, seed)
    rot_x = uniform((2, 6, 2, 64), dtype, seed)
    rot_t = uniform((1, 6, 1, 64), dtype, seed + 1, -1, 1)
    key = uniform((5, 2, 32), dtype, seed)
    slots = torch.tensor([3, 0, -1, 7, 40], dtype=torch.int32)

    def grad_sample():
        # Fresh tensors per call: the in-place form writes dlogits over its logits.
        return (
            uniform((3, 40), dtype, seed),
            torch.tensor([5, -100, 39], dtype=torch.int32),
            torch.logsumexp(uniform((3, 40), dtype, seed).float() / 0.7, -1),
            uniform((3,), torch.float32, seed + 1, 0.0, 3.0),
            uniform((3,), torch.float32, seed + 2, -1, 1),
            uniform((3,), torch.float32, seed + 3, -1, 1),
            0.7,
            -100,
        )

    return {
        "rms_norm": (x, uniform((40,), dtype, seed + 1), 1e-6),
        "layer_norm": (x, uniform((40,), dtype, seed + 1), uniform((40,), dtype, seed + 2), 1e-5),
        "add_rms_norm": (x, uniform((3, 40), dtype, seed + 2), uniform((40,), dtype, seed + 1), 1e-6),
        "rotary_mul": (rot_x, rot_t, uniform((1, 6, 1, 64), dtype, seed + 2, -1, 1), "half"),
        "rotary_mul_grad": (
            uniform((2, 6, 2, 64), dtype, seed + 5),
            rot_x,
            rot_t,
            uniform((1, 6, 1, 64), dtype, seed + 2, -1, 1),
            "half",
            True,
        ),
        "gelu_tanh": (x,),
        "gelu_erf": (x,),
        "fast_gelu": (x,),
        "swiglu": (x, uniform((3, 40), dtype, seed + 3)),
        "gelu_tanh_grad": (uniform((3, 40), dtype, seed + 5), x),
        "gelu_erf_grad": (uniform((3, 40), dtype, seed + 5), x),
        "fast_gelu_grad": (uniform((3, 40), dtype, seed + 5), x),
        "swiglu_grad": (uniform((3, 40), dtype, seed + 5), x, uniform((3, 40), dtype, seed + 3)),
        "rms_norm_grad": (
            uniform((3, 40), dtype, seed + 5),
            x,
            uniform((3, 1), torch.float32, seed + 6, 0.1, 2.0),
            uniform((40,), dtype, seed + 1),
        ),
        "add_rms_norm_grad": (
            uniform((3, 40), dtype, seed + 5),
            x,
            uniform((3, 1), torch.float32, seed + 6, 0.1, 2.0),
            uniform((40,), dtype, seed + 1),
            uniform((3, 40), dtype, seed + 7),
        ),
        "layer_norm_grad": (
            uniform((3, 40), dtype, seed + 5),
            x,
            uniform((3, 1), torch.float32, seed + 8, -1.0, 1.0),
            uniform((3, 1), torch.float32, seed + 6, 0.1, 2.0),
            uniform((40,), dtype, seed + 1),
        ),
        "bsnd_to_bnsd": (rot_x,),
        "bnsd_to_bsnd": (rot_x,),
        "reshape_and_cache": (
            key,
            uniform((5, 2, 16), dtype, seed + 4),
            torch.zeros((2, 8, 2, 32), dtype=dtype),
            torch.zeros((2, 8, 2, 16), dtype=dtype),
            slots,
        ),
        "reshape_and_cache_int8": (
            key,
            uniform((5, 2, 16), dtype, seed + 4),
            torch.zeros((2, 8, 2, 32), dtype=torch.int8),
            torch.zeros((2, 8, 2, 16), dtype=torch.int8),
            torch.zeros((2, 8, 2), dtype=torch.float32),
            torch.zeros((2, 8, 2), dtype=torch.float32),
            slots,
        ),
        "logprob_entropy": (uniform((3, 40), dtype, seed), torch.tensor([5, -100, 39], dtype=torch.int32), 0.7, -100),
        "logprob_entropy_grad": grad_sample(),
        # The same arguments; dlogits come back in the logits tensor (Tensor(a!), no return).
        "logprob_entropy_grad_inplace": grad_sample(),
        "gae": gae_sample(seed),
        "discounted_return": gae_sample(seed)[0:3:2] + (0.99,),
        "masked_whiten": (gae_sample(seed)[0], gae_sample(seed)[2], True),
        "grpo_advantage": (
            gae_sample(seed)[0],
            gae_sample(seed)[2],
            torch.tensor([1, 0, 1], dtype=torch.int32),
            1e-6,
            True,
        ),
        "dequant_int8": (
            torch.randint(-127, 128, (4, 3, 32), generator=gen(seed), dtype=torch.int8),
            uniform((4, 3), torch.float32, seed, 0.001, 0.1),
            "float32" if dtype == torch.float32 else opgen_torch_name(dtype),
        ),
    }


def gae_sample(seed, shape=(3, 40), gamma=0.99, lam=0.95):
    """gae's float32 arguments: rewards, values, a 0/1 mask with holes, gamma, lam."""
    mask = (torch.rand(shape, generator=gen(seed + 2)) > 0.3).to(torch.float32)
    return (uniform(shape, torch.float32, seed), uniform(shape, torch.float32, seed + 1), mask, gamma, lam)


def verl_gae(token_level_rewards, values, response_mask, gamma, lam):
    """verl's compute_gae_advantage_return loop (before whitening), written out, in the inputs'
    dtype: float64 inputs give the gold, float32 ones verl's own float32 result."""
    nextvalues = torch.zeros_like(values[:, 0])
    lastgaelam = torch.zeros_like(values[:, 0])
    advantages_reversed = []
    for t in reversed(range(values.shape[1])):
        delta = token_level_rewards[:, t] + gamma * nextvalues - values[:, t]
        lastgaelam_ = delta + gamma * lam * lastgaelam
        nextvalues = values[:, t] * response_mask[:, t] + (1 - response_mask[:, t]) * nextvalues
        lastgaelam = lastgaelam_ * response_mask[:, t] + (1 - response_mask[:, t]) * lastgaelam
        advantages_reversed.append(lastgaelam)
    advantages = torch.stack(advantages_reversed[::-1], dim=1)
    return advantages, advantages + values


def verl_discounted_return(token_level_rewards, response_mask, gamma):
    """verl's REINFORCE++ returns loop (before whitening), written out, in the inputs' dtype."""
    returns = torch.zeros_like(token_level_rewards)
    running_return = torch.zeros_like(token_level_rewards[:, 0])
    for t in reversed(range(token_level_rewards.shape[1])):
        running_return = token_level_rewards[:, t] + gamma * running_return
        returns[:, t] = running_return
        running_return = running_return * response_mask[:, t]
    return returns


def whiten_over(values, mask):
    """verl's masked_whiten written from its formula: (x - mean) / sqrt(var + 1e-8), mean and the
    Bessel-corrected variance over the mask's ones, every element shifted and scaled."""
    count = mask.sum()
    mean = (values * mask).sum() / (count + 1e-8)
    var = ((values - mean) ** 2 * mask).sum() / (count + 1e-8) * (count / (count - 1))
    return (values - mean) / torch.sqrt(var + 1e-8)


def verl_grpo(token_level_rewards, response_mask, index, epsilon=1e-6, norm_adv_by_std_in_grpo=True):
    """verl's compute_grpo_outcome_advantage written out, in the inputs' dtype: the rows' summed
    rewards, per group (rows with one index) mean and torch.std (unbiased), a one-row group mean 0
    and std 1, then (score - mean) / (std + epsilon) (or score - mean) times the mask."""
    scores = token_level_rewards.sum(dim=-1)
    groups = {}
    for i in range(scores.shape[0]):
        groups.setdefault(index[i], []).append(scores[i])
    stats = {}
    for key, members in groups.items():
        if len(members) == 1:
            stats[key] = (torch.tensor(0.0, dtype=scores.dtype), torch.tensor(1.0, dtype=scores.dtype))
        else:
            s = torch.stack(members)
            stats[key] = (torch.mean(s), torch.std(s))
    out = scores.clone()
    for i in range(scores.shape[0]):
        mean, std = stats[index[i]]
        out[i] = (scores[i] - mean) / (std + epsilon) if norm_adv_by_std_in_grpo else scores[i] - mean
    return out.unsqueeze(-1) * response_mask


def ragen_bi_level_gae(rewards, values, loss_mask, gamma, lam, high_level_gamma):
    """RAGEN's two-level GAE loop (compute_bi_level_gae_advantage_return), written out per row in
    the inputs' dtype: a turn-level GAE over the nonzero-reward (eos) tokens, whose returns
    replace those rewards, then a token-level GAE over the loss_mask tokens that restarts at each
    eos; the advantages whitened over loss_mask."""
    batch, t = rewards.shape
    adv = torch.zeros_like(rewards)
    ret = torch.zeros_like(rewards)
    upd = rewards.clone()
    for b in range(batch):
        eos = [p for p in range(t) if rewards[b, p] != 0]
        last = 0.0
        for i in reversed(range(len(eos))):
            p = eos[i]
            nextv = values[b, eos[i + 1]] if i + 1 < len(eos) else 0.0
            last = upd[b, p] + high_level_gamma * nextv - values[b, p] + high_level_gamma * lam * last
            adv[b, p] = last
        for p in eos:
            ret[b, p] = adv[b, p] + values[b, p]
            upd[b, p] = ret[b, p]
        valid = [p for p in range(t) if loss_mask[b, p] != 0]
        last = 0.0
        for i in reversed(range(len(valid))):
            p = valid[i]
            if p in eos:
                nextv, last = 0.0, 0.0
            else:
                nextv = values[b, valid[i + 1]]
            last = upd[b, p] + gamma * nextv - values[b, p] + gamma * lam * last
            adv[b, p] = last
            ret[b, p] = last + values[b, p]
    return whiten_over(adv, loss_mask), ret


def multi_turn_sample(seed, rows=5, t=160):
    """Multi-turn rows as agent trainers build them: environment tokens (loss_mask 0, reward 0),
    then a response (loss_mask 1) whose last token carries the turn's nonzero reward, repeated,
    then padding; row 1 also has a nonzero reward on an environment token (an eos the token
    level never visits). Rewards, values (float32) and loss_mask (float32)."""
    g = gen(seed)
    rewards = torch.zeros((rows, t))
    mask = torch.zeros((rows, t))
    for b in range(rows):
        p = 0
        while True:
            env, resp = (int(x) for x in torch.randint(0, 9, (2,), generator=g))
            resp += 1
            if p + env + resp > t - 3:
                break
            p += env
            mask[b, p : p + resp] = 1.0
            rewards[b, p + resp - 1] = float(torch.rand((), generator=g)) * 4.0 - 2.0 or 0.5
            p += resp
    rewards[1, 0] = 0.75
    mask[1, 0] = 0.0
    values = uniform((rows, t), torch.float32, seed + 1, -1.0, 1.0)
    return rewards, values, mask


def opgen_torch_name(dtype):
    return {torch.float16: "float16", torch.bfloat16: "bfloat16", torch.float32: "float32"}[dtype]


class Registration(unittest.TestCase):
    def test_backend_is_cpu(self):
        self.assertEqual(opgen_torch.backend(), "cpu")

    def test_samples_cover_every_op(self):
        self.assertEqual(sorted(samples()), sorted(opgen_torch.OPS))

    def test_opcheck_every_op(self):
        for name, args in samples().items():
            with self.subTest(op=name):
                torch.library.opcheck(getattr(OPS, name).default, args)


class Forward(unittest.TestCase):
    def test_rms_norm(self):
        for dtype in FLOATS:
            for shape, gshape in [((4, 64), (64,)), ((2, 3, 896), (896,)), ((5, 8, 16), (8, 16))]:
                with self.subTest(dtype=dtype, shape=shape):
                    x, g = uniform(shape, dtype, 11), uniform(gshape, dtype, 12)
                    y, rstd = OPS.rms_norm(x, g, 1e-6)
                    y64, rstd64 = rms_norm_gold(x, g, 1e-6)
                    check_close(self, "y", y, y64)
                    check_close(self, "rstd", rstd, rstd64)

    def test_add_rms_norm(self):
        for dtype in FLOATS:
            for shape in [(4, 64), (3, 1000)]:
                with self.subTest(dtype=dtype, shape=shape):
                    x1, x2, g = uniform(shape, dtype, 21), uniform(shape, dtype, 22), uniform(shape[-1:], dtype, 23)
                    y, rstd, x_sum = OPS.add_rms_norm(x1, x2, g, 1e-6)
                    s = (x1.double() + x2.double()).to(dtype)  # the sum is rounded to the dtype first
                    check_close(self, "x_sum", x_sum, x1.double() + x2.double())
                    xs = s.double()
                    rstd64 = torch.rsqrt(xs.pow(2).mean(-1, keepdim=True) + 1e-6)
                    # y = RNE(RNE(x_sum * rstd) * gamma): the normalised row is rounded to the dtype.
                    normed = (xs * rstd64).to(dtype).double()
                    check_close(self, "y", y, normed * g.double())
                    check_close(self, "rstd", rstd, rstd64)

    def test_rotary_mul(self):
        for dtype in FLOATS:
            for mode in ("half", "interleave"):
                for xs, ts in [((2, 8, 4, 64), (1, 8, 1, 64)), ((1, 5, 2, 128), (1, 5, 1, 128))]:
                    with self.subTest(dtype=dtype, mode=mode, shape=xs):
                        x = uniform(xs, dtype, 31)
                        c, s = uniform(ts, dtype, 32, -1, 1), uniform(ts, dtype, 33, -1, 1)
                        y = OPS.rotary_mul(x, c, s, mode)
                        x64 = x.double()
                        check_close(self, "y", y, x64 * c.double() + rotate(x64, mode) * s.double())

    def test_rotary_mul_grad(self):
        # Against torch autograd of the forward's float64 formula (dx; dr1/dr2 summed over the
        # broadcast dims); without table_grads dr1/dr2 are zeros.
        for dtype in FLOATS:
            for mode in ("half", "interleave"):
                for xs, ts in [((2, 8, 4, 64), (1, 8, 1, 64)), ((3, 5, 2, 72), (3, 1, 1, 72))]:
                    for table_grads in (True, False):
                        with self.subTest(dtype=dtype, mode=mode, shape=xs, table_grads=table_grads):
                            x, dy = uniform(xs, dtype, 61), uniform(xs, dtype, 62)
                            c, s = uniform(ts, dtype, 63, -1, 1), uniform(ts, dtype, 64, -1, 1)
                            dx, dr1, dr2 = OPS.rotary_mul_grad(dy, x, c, s, mode, table_grads)
                            x64 = x.double().requires_grad_()
                            c64 = c.double().requires_grad_()
                            s64 = s.double().requires_grad_()
                            y = x64 * c64 + rotate(x64, mode) * s64
                            gx, gc, gs = torch.autograd.grad(y, (x64, c64, s64), dy.double())
                            check_close(self, "dx", dx, gx)
                            if table_grads:
                                check_close(self, "dr1", dr1, gc)
                                check_close(self, "dr2", dr2, gs)
                            else:
                                self.assertTrue(bool((dr1 == 0).all()) and bool((dr2 == 0).all()))

    def test_activations(self):
        golds = {"gelu_tanh": gelu_tanh_gold, "gelu_erf": gelu_erf_gold, "fast_gelu": fast_gelu_gold}
        for name, gold in golds.items():
            for dtype in FLOATS:
                for shape in [(7, 33), (4096,)]:
                    with self.subTest(op=name, dtype=dtype, shape=shape):
                        x = uniform(shape, dtype, 41)
                        check_close(self, "y", getattr(OPS, name)(x), gold(x))

    def test_swiglu(self):
        for dtype in FLOATS:
            for shape in [(7, 33), (2, 4864)]:
                with self.subTest(dtype=dtype, shape=shape):
                    g, u = uniform(shape, dtype, 51), uniform(shape, dtype, 52)
                    check_close(self, "y", OPS.swiglu(g, u), swiglu_gold(g, u))

    def test_activation_grads(self):
        golds = {
            "gelu_tanh_grad": gelu_tanh_gold,
            "gelu_erf_grad": gelu_erf_gold,
            "fast_gelu_grad": fast_gelu_gold,
            "swiglu_grad": swiglu_gold,
        }
        for name, forward in golds.items():
            for dtype in FLOATS:
                with self.subTest(op=name, dtype=dtype):
                    n_in = 2 if name == "swiglu_grad" else 1
                    inputs = [uniform((7, 33), dtype, 71 + i) for i in range(n_in)]
                    dy = uniform((7, 33), dtype, 70, -2, 2)
                    got = getattr(OPS, name)(dy, *inputs)
                    got = got if isinstance(got, tuple) else (got,)
                    for k, (g, want) in enumerate(zip(got, grad_gold(forward, dy, *inputs))):
                        check_close(self, f"d input {k}", g, want)

    def test_permutes(self):
        for dtype in FLOATS + (torch.int8,):
            with self.subTest(dtype=dtype):
                x = uniform((2, 5, 3, 16), torch.float32, 61).to(dtype)
                self.assertTrue(torch.equal(OPS.bsnd_to_bnsd(x), x.permute(0, 2, 1, 3)))
                self.assertTrue(torch.equal(OPS.bnsd_to_bsnd(x), x.permute(0, 2, 1, 3)))

    def test_reshape_and_cache(self):
        for dtype in FLOATS + (torch.int8,):
            with self.subTest(dtype=dtype):
                key = uniform((6, 2, 32), torch.float32, 71).to(dtype)
                value = uniform((6, 2, 16), torch.float32, 72).to(dtype)
                kc = uniform((3, 4, 2, 32), torch.float32, 73).to(dtype)
                vc = uniform((3, 4, 2, 16), torch.float32, 74).to(dtype)
                slots = torch.tensor([5, 0, -1, 11, 12, 5], dtype=torch.int32)  # pad, past, duplicate
                kc_gold, past = cache_gold(key, kc, slots)
                vc_gold, _ = cache_gold(value, vc, slots)
                out = OPS.reshape_and_cache(key, value, kc, vc, slots)
                self.assertEqual(out.tolist(), [past])
                self.assertTrue(torch.equal(kc, kc_gold))
                self.assertTrue(torch.equal(vc, vc_gold))

    def test_reshape_and_cache_int8(self):
        for dtype in FLOATS:
            with self.subTest(dtype=dtype):
                key, value = uniform((5, 2, 32), dtype, 81), uniform((5, 2, 16), dtype, 82)
                kc, vc = torch.zeros((2, 4, 2, 32), dtype=torch.int8), torch.zeros((2, 4, 2, 16), dtype=torch.int8)
                ks, vs = torch.zeros((2, 4, 2)), torch.zeros((2, 4, 2))
                slots = torch.tensor([1, 7, -1, 2, 9], dtype=torch.int32)
                out = OPS.reshape_and_cache_int8(key, value, kc, vc, ks, vs, slots)
                self.assertEqual(out.tolist(), [1])
                for x, cache, scales in ((key, kc, ks), (value, vc, vs)):
                    q, scale = quantize_gold(x)
                    q_gold, _ = cache_gold(q, torch.zeros_like(cache), slots)
                    s_gold, _ = cache_gold(scale, torch.zeros_like(scales), slots)
                    self.assertLessEqual(int((cache.int() - q_gold.int()).abs().max()), 1)
                    self.assertTrue(torch.equal(scales, s_gold))

    def test_dequant_int8(self):
        for dtype in FLOATS:
            with self.subTest(dtype=dtype):
                q = torch.randint(-127, 128, (4, 3, 64), generator=gen(91), dtype=torch.int8)
                scale = uniform((4, 3), torch.float32, 92, 1e-3, 0.1)
                x = OPS.dequant_int8(q, scale, opgen_torch_name(dtype))
                self.assertEqual(x.dtype, dtype)
                check_close(self, "x", x, q.double() * scale.double()[..., None])

    def test_logprob_entropy(self):
        # float64 math from the definition: z = logits / T, lse = logsumexp(z), logprob =
        # z[target] - lse, entropy = -sum p log p; an ignore_index row gives 0 and 0. The bar,
        # 1e-4 absolute, is a few times the op's float32 bound at |z| <= 8 / 0.7 and V = 1000
        # (2^-24 (12 |z| + 8 log2 V + 32) ~ 1.5e-5); a tile combine without its rescale is off by
        # far more.
        target = torch.tensor([3, -100, 999, 0, 512], dtype=torch.int64)
        for dtype in FLOATS:
            with self.subTest(dtype=dtype):
                logits = uniform((5, 1000), dtype, 93, -8.0, 8.0)
                got = OPS.logprob_entropy(logits, target, 0.7, -100)
                z = logits.double() / 0.7
                lse = torch.logsumexp(z, -1)
                logp = z - lse[:, None]
                keep = target != -100
                lp = torch.where(keep, logp.gather(1, target.clamp(min=0)[:, None])[:, 0], 0.0)
                ent = torch.where(keep, -(logp.exp() * logp).sum(-1), 0.0)
                for name, g, want in zip(("logprob", "entropy", "lse"), got, (lp, ent, lse)):
                    self.assertEqual(g.dtype, torch.float32, name)
                    torch.testing.assert_close(g.double(), want, atol=1e-4, rtol=0, msg=name)

    def test_logprob_entropy_of_few_rows_splits_v_with_the_same_bits(self):
        # 5 rows of V = 30000 (several UB tiles) are fewer than the cores: the op splits V over
        # the cores (mode v-split, a workspace and SyncAll); the same rows among 60 go over the
        # cores whole. Batch invariance: the same bits either way. Against float64 math, 1e-4
        # absolute, a few times the op's float32 bound at |z| <= 8 / 0.7 and V = 30000
        # (2^-24 (12 |z| + 8 log2 V + 32) ~ 1.7e-5).
        target = torch.tensor([3, -100, 29999, 0, 12288] + list(range(100, 5600, 100)), dtype=torch.int64)
        for dtype in FLOATS:
            with self.subTest(dtype=dtype):
                logits = uniform((60, 30000), dtype, 98, -8.0, 8.0)
                few = OPS.logprob_entropy(logits[:5].contiguous(), target[:5].contiguous(), 0.7, -100)
                many = OPS.logprob_entropy(logits, target, 0.7, -100)
                z = logits[:5].double() / 0.7
                lse = torch.logsumexp(z, -1)
                logp = z - lse[:, None]
                keep = target[:5] != -100
                lp = torch.where(keep, logp.gather(1, target[:5].clamp(min=0)[:, None])[:, 0], 0.0)
                ent = torch.where(keep, -(logp.exp() * logp).sum(-1), 0.0)
                for name, f, m, want in zip(("logprob", "entropy", "lse"), few, many, (lp, ent, lse)):
                    self.assertTrue(torch.equal(f, m[:5]), f"{name}: {f} split, {m[:5]} among 60 rows")
                    torch.testing.assert_close(f.double(), want, atol=1e-4, rtol=0, msg=name)

    def test_gae_matches_verls_loop(self):
        # Gold: verl's loop in float64 from the float32 inputs. Bar: the dual baseline, 4x the
        # largest deviation of verl's own float32 loop from the gold (at least 1e-6): the
        # sequential float32 error grows with T when gamma * lam = 1, the same for both. A mask
        # that forgets to carry nextv or last is off by O(1).
        import opgen_torch.rl

        # (3, 4099): few long rows, T in segments over the cores joined after SyncAll (the
        # kernel's time split, T >= 385); (5, 300) walks each row on one core.
        for gamma, lam in ((0.99, 0.95), (1.0, 1.0)):
            for shape in ((5, 300), (70, 9), (1, 1), (3, 4099)):
                with self.subTest(gamma=gamma, lam=lam, shape=shape):
                    r, v, m, _, _ = gae_sample(94, shape)
                    m[0, :] = 0.0  # an all-masked row
                    got = opgen_torch.rl.gae(r, v, m, gamma, lam)
                    want = verl_gae(r.double(), v.double(), m.double(), gamma, lam)
                    f32 = verl_gae(r, v, m, gamma, lam)
                    for name, g, w, b in zip(("advantages", "returns"), got, want, f32):
                        self.assertEqual((g.dtype, g.shape), (torch.float32, r.shape), name)
                        bar = max(4 * (b.double() - w).abs().max().item(), 1e-6)
                        torch.testing.assert_close(g.double(), w, atol=bar, rtol=0, msg=name)

    def test_bi_level_gae_matches_ragens_loop(self):
        # Gold: RAGEN's two-level loop in float64 from the float32 inputs; bar: the dual baseline
        # (4x the float32 loop's largest deviation from the gold, at least 1e-5 for the whitened
        # advantages' extra rounding). A token level that does not restart at each eos, or a turn
        # level that misses the returns written back as rewards, is off by O(1).
        import opgen_torch.rl

        for gamma, lam, hg in ((0.99, 0.95, 0.9), (1.0, 1.0, 1.0)):
            with self.subTest(gamma=gamma, lam=lam, high_level_gamma=hg):
                r, v, m = multi_turn_sample(104)
                got = opgen_torch.rl.bi_level_gae(r, v, m.bool(), gamma, lam, hg)
                want = ragen_bi_level_gae(r.double(), v.double(), m.double(), gamma, lam, hg)
                f32 = ragen_bi_level_gae(r, v, m, gamma, lam, hg)
                for name, g, w, b in zip(("advantages", "returns"), got, want, f32):
                    self.assertEqual((g.dtype, g.shape), (torch.float32, r.shape), name)
                    bar = max(4 * (b.double() - w).abs().max().item(), 1e-5)
                    torch.testing.assert_close(g.double(), w, atol=bar, rtol=0, msg=name)

    def test_bi_level_gae_is_two_gae_launches_and_a_whitening(self):
        import opgen_torch.rl

        r, v, m = multi_turn_sample(105, rows=3, t=40)
        with RecordOps() as rec:
            opgen_torch.rl.bi_level_gae(r.bfloat16(), v.bfloat16(), m.to(torch.int8), 0.99, 0.95, 0.9)
        want = ["opgen.gae.default"] * 2 + ["opgen.masked_whiten.default"]
        self.assertEqual([o for o in rec.ops if o.startswith("opgen.")], want, rec.ops)

    def test_grpo_advantage_is_verls(self):
        # Gold: verl's loop in float64 from the rounded inputs; bar: 4x verl's own float32 loop's
        # largest deviation from the gold, at least 1e-5. uid strings with shuffled groups of 1 to
        # 5 rows (singletons: mean 0, std 1), verl's reward on the last response token, and
        # dense rewards; a biased std or a group mean over the wrong rows is off by O(0.1).
        import numpy as np
        import opgen_torch.rl

        g = gen(120)
        sizes = [1, 5, 2, 1, 3, 4, 2, 1, 5, 3]
        uids = np.array([f"uid-{k}" for k, n in enumerate(sizes) for _ in range(n)], dtype=object)
        rows = len(uids)
        uids = uids[torch.randperm(rows, generator=g).numpy()]
        lengths = torch.randint(1, 58, (rows,), generator=g)
        m = (torch.arange(57)[None, :] < lengths[:, None]).to(torch.float32)
        last = torch.zeros((rows, 57))
        last[torch.arange(rows), lengths - 1] = uniform((rows,), torch.float32, 121, -1.0, 1.0)
        dense = uniform((rows, 57), torch.float32, 122)
        for name, r in (("last-token", last), ("dense", dense)):
            for norm in (True, False):
                for dtype, mask in ((torch.float32, m), (torch.bfloat16, m.bool()), (torch.float16, m.to(torch.int8))):
                    with self.subTest(rewards=name, norm=norm, dtype=dtype):
                        rv = r.to(dtype)
                        with RecordOps() as rec:
                            adv, ret = opgen_torch.rl.grpo_advantage(rv, mask, uids, norm_adv_by_std_in_grpo=norm)
                        ops = [o for o in rec.ops if o.startswith("opgen.")]
                        self.assertEqual(ops, ["opgen.grpo_advantage.default"])
                        self.assertIs(adv, ret)
                        self.assertEqual((adv.dtype, adv.shape), (torch.float32, r.shape))
                        want = verl_grpo(rv.double(), m.double(), list(uids), 1e-6, norm)
                        f32 = verl_grpo(rv.float(), m, list(uids), 1e-6, norm)
                        bar = max(4 * (f32.double() - want).abs().max().item(), 1e-5)
                        torch.testing.assert_close(adv.double(), want, atol=bar, rtol=0)
        # An integer tensor index: the same groups as the strings.
        ids = torch.tensor([int(u.split("-")[1]) * 7 for u in uids])
        by_ints = opgen_torch.rl.grpo_advantage(dense, m, ids)[0]
        torch.testing.assert_close(by_ints, opgen_torch.rl.grpo_advantage(dense, m, uids)[0], atol=0, rtol=0)

    def test_grpo_advantage_refusals(self):
        import opgen_torch.rl

        r = uniform((4, 9), torch.float32, 123)
        m = torch.ones((4, 9))
        with self.assertRaisesRegex(RuntimeError, "`token_level_rewards` requires grad"):
            opgen_torch.rl.grpo_advantage(r.clone().requires_grad_(), m, [0, 0, 1, 1])
        with self.assertRaisesRegex(ValueError, "index has 3 entries; token_level_rewards has 4 rows"):
            opgen_torch.rl.grpo_advantage(r, m, [0, 0, 1])
        with self.assertRaisesRegex(RuntimeError, "has 4097 rows; at most 4096"):
            opgen_torch.rl.grpo_advantage(torch.zeros((4097, 2)), torch.ones((4097, 2)), list(range(4097)))

    def test_masked_whiten_is_verls(self):
        import opgen_torch.rl

        x = uniform((4, 33), torch.float32, 106)
        m = (torch.rand((4, 33), generator=gen(107)) > 0.4).to(torch.float32)
        want = whiten_over(x.double(), m.double())
        torch.testing.assert_close(opgen_torch.rl.masked_whiten(x, m).double(), want, atol=1e-5, rtol=0)
        mean = (x.double() * m.double()).sum() / m.double().sum()
        torch.testing.assert_close(
            opgen_torch.rl.masked_whiten(x, m.bool(), shift_mean=False).double(), want + mean, atol=1e-5, rtol=0
        )
        with self.assertRaisesRegex(ValueError, "selects 1 element"):
            opgen_torch.rl.masked_whiten(x, torch.eye(1, 33).expand(4, 33) * (torch.arange(4) == 0).unsqueeze(1))

    def test_masked_whiten_is_one_launch_over_tiles_and_cores(self):
        # Gold: verl's formula in float64 from the rounded inputs; bar: 4x verl's own float32
        # formula's largest deviation from the gold, at least 1e-5. 64 x 4000 elements are 63 tiles
        # of 4096 over 48 cores (two on some); 16-bit values and int8 / bool masks go as they are.
        import opgen_torch.rl

        x = uniform((64, 4000), torch.float32, 108) * 3.0 + 7.0
        m = torch.rand((64, 4000), generator=gen(109)) > 0.25
        for dtype, mask in ((torch.float32, m.float()), (torch.bfloat16, m), (torch.float16, m.to(torch.int8))):
            for shift_mean in (True, False):
                with self.subTest(dtype=dtype, shift_mean=shift_mean):
                    xv = x.to(dtype)
                    want = whiten_over(xv.double(), m.double())
                    f32 = whiten_over(xv.float(), m.float())
                    if not shift_mean:
                        mean = (xv.double() * m.double()).sum() / (m.double().sum() + 1e-8)
                        want, f32 = want + mean, f32 + mean.float()
                    with RecordOps() as rec:
                        got = opgen_torch.rl.masked_whiten(xv, mask, shift_mean=shift_mean)
                    self.assertEqual([o for o in rec.ops if o.startswith("opgen.")], ["opgen.masked_whiten.default"])
                    self.assertEqual((got.dtype, got.shape), (torch.float32, x.shape))
                    bar = max(4 * (f32.double() - want).abs().max().item(), 1e-5)
                    torch.testing.assert_close(got.double(), want, atol=bar, rtol=0)
        with self.assertRaisesRegex(RuntimeError, "`values` requires grad"):
            opgen_torch.rl.masked_whiten(x.clone().requires_grad_(), m)
        with self.assertRaisesRegex(ValueError, "selects 0 element"):
            opgen_torch.rl.masked_whiten(x, torch.zeros_like(m))

    def test_discounted_return_matches_verls_loop(self):
        # The gold and the bar as test_gae_matches_verls_loop's.
        import opgen_torch.rl

        for gamma in (0.99, 1.0):
            for shape in ((5, 300), (70, 9), (1, 1), (3, 4099)):
                with self.subTest(gamma=gamma, shape=shape):
                    r, _, m, _, _ = gae_sample(96, shape)
                    got = opgen_torch.rl.discounted_return(r, m, gamma)
                    want = verl_discounted_return(r.double(), m.double(), gamma)
                    f32 = verl_discounted_return(r, m, gamma)
                    self.assertEqual((got.dtype, got.shape), (torch.float32, r.shape))
                    bar = max(4 * (f32.double() - want).abs().max().item(), 1e-6)
                    torch.testing.assert_close(got.double(), want, atol=bar, rtol=0)

    def test_gae_and_discounted_return_take_16_bit_inputs_and_bool_or_int8_masks(self):
        # As trainers pass them: bfloat16/float16 rewards and values, a bool or int8 mask. Gold:
        # verl's loop in float64 from the inputs' exact values; bar: the dual baseline, 4x the
        # largest deviation of verl's float32 loop on the same values from the gold (at least
        # 1e-6). A mask whose bytes were misread (bool as float, int8 as half) is off by O(1).
        import opgen_torch.rl

        for dtype in (torch.bfloat16, torch.float16):
            for mask_dtype in (torch.bool, torch.int8):
                for shape in ((5, 300), (70, 9)):
                    with self.subTest(dtype=dtype, mask=mask_dtype, shape=shape):
                        r = uniform(shape, dtype, 97)
                        v = uniform(shape, dtype, 98)
                        m = torch.rand(shape, generator=gen(99)) > 0.3
                        m[0, :] = False  # an all-masked row
                        m = m.to(mask_dtype)
                        m64 = m.double()
                        got = opgen_torch.rl.gae(r, v, m, 0.99, 0.95)
                        want = verl_gae(r.double(), v.double(), m64, 0.99, 0.95)
                        f32 = verl_gae(r.float(), v.float(), m64.float(), 0.99, 0.95)
                        for name, g, w, b in zip(("advantages", "returns"), got, want, f32):
                            self.assertEqual((g.dtype, g.shape), (torch.float32, r.shape), name)
                            bar = max(4 * (b.double() - w).abs().max().item(), 1e-6)
                            torch.testing.assert_close(g.double(), w, atol=bar, rtol=0, msg=name)
                        got = opgen_torch.rl.discounted_return(r, m, 1.0)
                        want = verl_discounted_return(r.double(), m64, 1.0)
                        f32 = verl_discounted_return(r.float(), m64.float(), 1.0)
                        self.assertEqual((got.dtype, got.shape), (torch.float32, r.shape))
                        bar = max(4 * (f32.double() - want).abs().max().item(), 1e-6)
                        torch.testing.assert_close(got.double(), want, atol=bar, rtol=0)

    def test_rl_scans_pass_bool_and_int8_masks_without_a_copy(self):
        # A bool mask reaches the op as its own bytes viewed as int8, an int8 one as it is, and
        # 16-bit rewards/values as they are: besides the ops, only aliases are dispatched (the
        # dtype view and the detach the dispatcher adds after it; no _to_copy, no float32 mask)
        # and the op reads the mask's own storage. A float16 mask is still converted to float32.
        import opgen_torch.rl

        aliases = ("aten.view.dtype", "aten.detach.default")
        r = uniform((4, 50), torch.bfloat16, 100)
        v = uniform((4, 50), torch.bfloat16, 101)
        for mask_dtype in (torch.bool, torch.int8):
            with self.subTest(mask=mask_dtype):
                m = (torch.rand((4, 50), generator=gen(102)) > 0.3).to(mask_dtype)
                with RecordOps() as rec:
                    opgen_torch.rl.gae(r, v, m, 0.99, 0.95)
                    opgen_torch.rl.discounted_return(r, m, 0.99)
                ran = [o for o in rec.ops if o not in aliases]
                self.assertEqual(ran, ["opgen.gae.default", "opgen.discounted_return.default"], rec.ops)
                self.assertEqual("aten.view.dtype" in rec.ops, mask_dtype == torch.bool, rec.ops)
                for op, args in rec.calls:
                    if op.startswith("opgen."):
                        mask = args["response_mask"]
                        self.assertEqual(mask.dtype, torch.int8, op)
                        self.assertEqual(mask.data_ptr(), m.data_ptr(), op)  # the same bytes
                        self.assertEqual(args["token_level_rewards"].dtype, torch.bfloat16, op)
        m = (torch.rand((4, 50), generator=gen(103)) > 0.3).to(torch.float16)
        with RecordOps() as rec:
            opgen_torch.rl.discounted_return(r, m, 0.99)
        self.assertEqual(rec.ops, ["aten._to_copy.default", "opgen.discounted_return.default"])
        self.assertEqual(rec.calls[-1][1]["response_mask"].dtype, torch.float32)

    def test_rl_gae_refuses_inputs_requiring_grad(self):
        import opgen_torch.rl

        r, v, m, gamma, lam = gae_sample(95)
        with self.assertRaisesRegex(RuntimeError, "rl.gae: `values` requires grad; it has no gradient"):
            opgen_torch.rl.gae(r, v.requires_grad_(), m, gamma, lam)

    def test_non_contiguous_input(self):
        x = uniform((64, 8), torch.float32, 5).t()  # [8, 64], not contiguous
        g = uniform((64,), torch.float32, 6)
        y, _ = OPS.rms_norm(x, g, 1e-6)
        check_close(self, "y", y, rms_norm_gold(x, g, 1e-6)[0])

    def test_empty_input(self):
        y, rstd = OPS.rms_norm(torch.empty(0, 64), torch.ones(64), 1e-6)
        self.assertEqual((y.shape, rstd.shape), (torch.Size([0, 64]), torch.Size([0, 1])))


# ---- the op_host's refusals, the same under FakeTensorMode ------------------------------------

# The cases, with the refusal word for word, shared with the NPU build's Meta check
# (scripts/torch_meta_check/meta_check.cpp reads the same file): host_refusals.txt.
REFUSALS_FILE = __import__("pathlib").Path(__file__).with_name("host_refusals.txt")
DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32, "int8": torch.int8, "int32": torch.int32}


class FakeOnly:
    """A fake:DTYPE[...] tensor: a shape only a fake (or meta) tensor can have cheaply (2^32
    rows), so the case is checked under FakeTensorMode, not on a real CPU tensor."""

    def __init__(self, build):
        self.build = build

    def __call__(self, make):
        return self.build(make)


def parse_argument(token):
    """DTYPE[d,d,...] -> a zero tensor; fake:DTYPE[...] -> the same, fake only; str:/float:/int:/bool:
    -> the value."""
    kind, _, value = token.partition(":")
    if kind == "fake":
        return FakeOnly(parse_argument(value))
    if kind == "str":
        return value
    if kind == "float":
        return float(value)
    if kind == "int":
        return int(value)
    if kind == "bool":
        return {"true": True, "false": False}[value]
    name, _, dims = token.partition("[")
    shape = tuple(int(d) for d in dims.rstrip("]").split(",") if d)
    return lambda make: make(shape, DTYPES[name])


def refusal_cases():
    """(title, op, builder of the arguments from a tensor factory, message, fake only) per line."""
    cases = []
    for line in REFUSALS_FILE.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        title, op, arguments, message = (f.strip() for f in line.split(" | ", 3))
        parsed = [parse_argument(t) for t in arguments.split()]
        build = lambda make, parsed=parsed: tuple(a(make) if callable(a) else a for a in parsed)  # noqa: E731
        cases.append((title, op, build, message, any(isinstance(a, FakeOnly) for a in parsed)))
    return cases


REFUSALS = refusal_cases()


def real_tensor(shape, dtype=torch.float32):
    return torch.zeros(shape, dtype=dtype)


class HostRefusals(unittest.TestCase):
    def setUp(self):
        # FakeTensorMode logs every refused Meta call with a traceback: expected here.
        import logging

        logging.getLogger("torch._subclasses.fake_tensor").setLevel(logging.CRITICAL)

    def refusal(self, op, args):
        with self.assertRaises(RuntimeError) as caught:
            getattr(OPS, op)(*args)
        return str(caught.exception).split("\n")[0]

    def test_meta_refuses_what_the_host_refuses(self):
        # On CPU tensors the twin-compiled op_host refuses (its InferShape/TilingFunc); under
        # FakeTensorMode the Meta kernel, which runs the same generated checks (opgen_torch.h).
        self.assertGreaterEqual(len(REFUSALS), 10)
        for title, op, build, message, fake_only in REFUSALS:
            with self.subTest(case=title):
                if not fake_only:
                    self.assertEqual(self.refusal(op, build(real_tensor)), message)
                with FakeTensorMode():
                    on_meta = self.refusal(op, build(real_tensor))
                self.assertEqual(on_meta, message)

    def test_accepted_shapes_trace(self):
        with FakeTensorMode():
            x = torch.empty(1, 4096, 2, 64)
            t = torch.empty(1, 4096, 1, 64)
            self.assertEqual(OPS.rotary_mul(x, t, t, "half").shape, x.shape)


def first_line_of_root(exc):
    """The first line of the error at the bottom of `exc`'s chain (dynamo wraps the Meta kernel's
    RuntimeError in its own)."""
    while (exc.__cause__ or exc.__context__) is not None:
        exc = exc.__cause__ or exc.__context__
    return str(exc).split("\n")[0]


class DynamicShapeHostChecks(unittest.TestCase):
    """torch.compile(dynamic=True) runs the op_host's own checks over symbolic sizes: a call the
    op_host refuses is refused while tracing, in the words of the eager refusal, and a valid call
    is not specialised to its sizes (a second size runs the same compiled frame)."""

    def setUp(self):
        import logging

        logging.getLogger("torch._subclasses.fake_tensor").setLevel(logging.CRITICAL)

    def compiled(self, op, args):
        """`op` compiled with dynamic shapes as a function of the tensors in `args` (the attrs are
        constants of the function), the frame counter, and the tensors."""
        from torch._dynamo.testing import CompileCounterWithBackend

        torch._dynamo.reset()
        is_tensor = [isinstance(a, torch.Tensor) for a in args]
        tensors = [a for a, t in zip(args, is_tensor) if t]
        attrs = [a for a, t in zip(args, is_tensor) if not t]  # no tensor: dynamo would guard on its sizes

        def call(*ts):
            ts, at = iter(ts), iter(attrs)
            return getattr(OPS, op)(*(next(ts) if t else next(at) for t in is_tensor))

        counter = CompileCounterWithBackend("aot_eager")
        return torch.compile(call, backend=counter, dynamic=True, fullgraph=True), counter, tensors

    def test_refusals_are_traced_with_the_op_hosts_words(self):
        # Every real-tensor case of host_refusals.txt (all nine families' checks): the compiled
        # call fails before the backend gets a graph, with the eager call's message.
        cases = [(title, op, build) for title, op, build, _, fake_only in REFUSALS if not fake_only]
        self.assertGreaterEqual(len({op for _, op, _ in cases}), 9)
        for title, op, build in cases:
            with self.subTest(case=title):
                args = build(real_tensor)
                with self.assertRaises(RuntimeError) as eager:
                    getattr(OPS, op)(*args)
                fn, counter, tensors = self.compiled(op, args)
                with self.assertRaises(RuntimeError) as traced:
                    fn(*tensors)
                calls = [g for g in counter.graphs if f"torch.ops.opgen.{op}(" in g.code]
                self.assertEqual(calls, [], "refused only when the compiled graph ran")
                self.assertEqual(first_line_of_root(traced.exception), str(eager.exception).split("\n")[0])

    # Valid calls of five families as a function of a size n that is dynamic under
    # torch.compile (a dim no other dim equals, so duck sizing gives it its own symbol).
    VALID = {
        "rotary_mul": lambda n: (uniform((2, n, 3, 8), torch.float32, 1), uniform((1, n, 1, 8), torch.float32, 2),
                                 uniform((1, n, 1, 8), torch.float32, 3), "half"),
        "rms_norm": lambda n: (uniform((n, 2, 16), torch.float16, 4), uniform((2, 16), torch.float16, 5), 1e-6),
        "dequant_int8": lambda n: (torch.randint(-128, 128, (n, 3, 32), generator=gen(6), dtype=torch.int8),
                                   uniform((n, 3), torch.float32, 7), "float16"),
        "logprob_entropy": lambda n: (uniform((n, 40), torch.float32, 8),
                                      torch.randint(0, 40, (n,), generator=gen(9), dtype=torch.int32), 0.7, -100),
        "gae": lambda n: (uniform((3, n), torch.float32, 10), uniform((3, n), torch.float32, 11),
                          torch.ones(3, n), 0.99, 0.95),
    }

    def test_valid_calls_are_not_specialised(self):
        for op, build in self.VALID.items():
            with self.subTest(op=op):
                fn, counter, _ = self.compiled(op, build(5))
                frames = []
                with torch._dynamo.config.patch(error_on_recompile=True):
                    for n in (5, 7):
                        args = build(n)
                        got = fn(*(a for a in args if isinstance(a, torch.Tensor)))
                        want = getattr(OPS, op)(*args)
                        for g, w in zip(*(r if isinstance(r, (tuple, list)) else (r,) for r in (got, want))):
                            self.assertTrue(torch.equal(g, w), f"{op} at n={n}")
                        frames.append(counter.frame_count)
                self.assertEqual(frames[1], frames[0], "the second size compiled again")

    def test_a_valid_calls_guards_keep_the_op_hosts_conditions(self):
        # The frame compiled for head dim 8 is kept for even head dims only (the op_host's
        # check as a guard): head dim 7 is traced again and refused there, before the compiled
        # graph runs, with the eager words.
        runs = []

        def counting(gm, example_inputs):
            def run(*args):
                runs.append(len(example_inputs))
                return gm(*args)

            return run

        torch._dynamo.reset()
        fn = torch.compile(lambda x, r1, r2: OPS.rotary_mul(x, r1, r2, "half"), backend=counting, dynamic=True,
                           fullgraph=True)
        fn(uniform((2, 5, 3, 8), torch.float32, 14), uniform((1, 5, 1, 8), torch.float32, 15),
           uniform((1, 5, 1, 8), torch.float32, 16))
        odd = (torch.zeros(2, 5, 3, 7), torch.zeros(1, 5, 1, 7), torch.zeros(1, 5, 1, 7))
        with self.assertRaises(RuntimeError) as eager:
            OPS.rotary_mul(*odd, "half")
        with self.assertRaises(RuntimeError) as traced:
            fn(*odd)
        self.assertEqual(len(runs), 1, "the compiled graph ran for the odd head dim")
        self.assertEqual(first_line_of_root(traced.exception), str(eager.exception).split("\n")[0])

    def test_data_dependent_sizes_are_left_to_the_kernel(self):
        # The tokens a mask keeps (RL: the response tokens) have an unbacked size under
        # torch.compile: nothing to guard on, so the checks are the kernel's; the graph still traces.
        logits = uniform((6, 40), torch.float32, 12)
        target = torch.randint(0, 40, (6,), generator=gen(13), dtype=torch.int32)
        keep = torch.tensor([True, False, True, True, False, True])

        def kept(logits, target, keep):
            return OPS.logprob_entropy(logits[keep], target[keep], 0.7, -100)

        torch._dynamo.reset()
        with torch._dynamo.config.patch(capture_dynamic_output_shape_ops=True):
            got = torch.compile(kept, backend="aot_eager", dynamic=True, fullgraph=True)(logits, target, keep)
        for g, w in zip(got, kept(logits, target, keep)):
            self.assertTrue(torch.equal(g, w))


# ---- autograd ---------------------------------------------------------------------------------


# Ops whose spec declares no backward op (rotary: not in the catalogue yet; caches and dequant:
# not differentiable; the grads: no second derivatives).
NO_BACKWARD = {
    "rotary_mul", "reshape_and_cache", "reshape_and_cache_int8", "dequant_int8",
    "gelu_tanh_grad", "gelu_erf_grad", "fast_gelu_grad", "swiglu_grad", "rms_norm_grad", "add_rms_norm_grad",
    "rotary_mul_grad", "layer_norm_grad", "logprob_entropy_grad", "logprob_entropy_grad_inplace",
    "gae", "discounted_return", "masked_whiten", "grpo_advantage",  # RL advantages: no gradient (verl computes them under no_grad)
}
# rotary_mul leaves NO_BACKWARD once its [backward] table is enabled (rotary_mul_grad).
if "rotary_mul" in opgen_torch.ops.BACKWARD:
    NO_BACKWARD.discard("rotary_mul")


class Autograd(unittest.TestCase):
    def test_every_op_without_backward_refuses_grad(self):
        for name, args in samples().items():
            if name not in NO_BACKWARD:
                continue
            floats = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor) and a.is_floating_point()]
            with self.subTest(op=name):
                i = floats[0]
                args = list(args)
                args[i] = args[i].clone().requires_grad_()
                with self.assertRaisesRegex(RuntimeError, f"opgen::{name}: input `\\w+` requires grad"):
                    getattr(OPS, name)(*args)

    def test_activation_backward_calls_the_generated_grad(self):
        # loss = sum(w · op(x)): x.grad = w · op'(x), from the generated <op>_grad kernel; the
        # bar is the float64 math's (autograd of the formula), as for every output.
        golds = {"gelu_tanh": gelu_tanh_gold, "gelu_erf": gelu_erf_gold, "fast_gelu": fast_gelu_gold}
        for name, forward in golds.items():
            for dtype in FLOATS:
                with self.subTest(op=name, dtype=dtype):
                    x = uniform((5, 48), dtype, 81).requires_grad_()
                    w = uniform((5, 48), dtype, 82, -2, 2)
                    (getattr(OPS, name)(x) * w).sum().backward()
                    (want,) = grad_gold(forward, w, x.detach())
                    check_close(self, "x.grad", x.grad, want)
        for dtype in FLOATS:
            with self.subTest(op="swiglu", dtype=dtype):
                g = uniform((5, 48), dtype, 83).requires_grad_()
                u = uniform((5, 48), dtype, 84).requires_grad_()
                w = uniform((5, 48), dtype, 85, -2, 2)
                (OPS.swiglu(g, u) * w).sum().backward()
                dg, du = grad_gold(swiglu_gold, w, g.detach(), u.detach())
                check_close(self, "gate.grad", g.grad, dg)
                check_close(self, "up.grad", u.grad, du)

    def test_permute_backward_is_the_inverse_permute(self):
        x = uniform((2, 5, 3, 16), torch.float32, 86).requires_grad_()
        w = uniform((2, 3, 5, 16), torch.float32, 87)
        (OPS.bsnd_to_bnsd(x) * w).sum().backward()
        self.assertTrue(torch.equal(x.grad, w.permute(0, 2, 1, 3)))

    def test_compiled_aot_eager_backward_matches_eager(self):
        torch._dynamo.reset()

        def loss(x):
            return (OPS.gelu_tanh(x) * 3).sum()

        x1 = uniform((4, 64), torch.float32, 88).requires_grad_()
        loss(x1).backward()
        x2 = x1.detach().clone().requires_grad_()
        torch.compile(loss, backend="aot_eager")(x2).backward()
        self.assertTrue(torch.equal(x1.grad, x2.grad))

    def test_backward_table_covers_every_op(self):
        self.assertEqual(sorted(set(opgen_torch.ops.BACKWARD) | NO_BACKWARD), sorted(opgen_torch.OPS))
        self.assertEqual(set(opgen_torch.ops.BACKWARD) & NO_BACKWARD, set())

    def test_error_names_the_input(self):
        args = list(samples()["dequant_int8"])
        args[1] = args[1].clone().requires_grad_()
        with self.assertRaisesRegex(RuntimeError, "opgen::dequant_int8: input `scale` requires grad"):
            OPS.dequant_int8(*args)

    def test_no_grad_mode_runs(self):
        x = torch.randn(2, 8, requires_grad=True)
        with torch.no_grad():
            y = OPS.dequant_int8(torch.ones(2, 8, dtype=torch.int8), torch.ones(2, requires_grad=True), "float32")
            z, _ = OPS.rms_norm(x, torch.ones(8), 1e-6)
        self.assertFalse(y.requires_grad or z.requires_grad)

    def test_compiled_aot_eager_refuses_grad(self):
        torch._dynamo.reset()

        def f(q, scale):
            return OPS.dequant_int8(q, scale, "float32").sum()

        compiled = torch.compile(f, backend="aot_eager")
        scale = torch.ones(2, requires_grad=True)
        with self.assertRaisesRegex(Exception, "opgen::dequant_int8: input `scale` requires grad"):
            compiled(torch.ones(2, 8, dtype=torch.int8), scale)

    def test_compiled_aot_eager_forward_matches_eager(self):
        torch._dynamo.reset()
        compiled = torch.compile(lambda g, u: OPS.swiglu(g, u) * 2, backend="aot_eager")
        g, u = torch.randn(4, 16), torch.randn(4, 16)
        self.assertTrue(torch.equal(compiled(g, u), OPS.swiglu(g, u) * 2))


# ---- the row norms' backward: rms_norm_grad / add_rms_norm_grad through torch autograd --------

# Unit roundoff per dtype: the floor of a baseline metric (a baseline that happens to be exact
# must not make any error fail).
UNIT = {torch.float16: 2.0**-11, torch.bfloat16: 2.0**-8, torch.float32: 2.0**-24}
# Below this |gold| the error counts as absolute (the relative error of a near-zero gradient
# means nothing), as CANN's standard takes small values.
SMALL = {torch.float16: 2.0**-10, torch.bfloat16: 2.0**-8, torch.float32: 1e-6}


def error_metrics(t, gold):
    err = (t.double() - gold).abs()
    rel = torch.where(gold.abs() < SMALL[t.dtype], err, err / gold.abs())
    return float(rel.max()), float(rel.mean()), float(err.pow(2).mean().sqrt())


def check_dual_baseline(test, name, got, base, gold):
    """CANN's dual-baseline standard, level L0: against the float64 gold, the op's MARE, MERE
    and RMSE are at most 10x, 2x and 2x the baseline's (torch's autograd of the same math in the
    op's dtype); the gradient keeps its input's dtype and shape."""
    test.assertEqual((got.dtype, got.shape), (base.dtype, base.shape), name)
    ours, theirs = error_metrics(got, gold), error_metrics(base, gold)
    for what, o, b, bound in zip(("MARE", "MERE", "RMSE"), ours, theirs, (10, 2, 2)):
        floor = UNIT[got.dtype] * (1 if what != "RMSE" else float(gold.abs().mean()))
        test.assertLessEqual(o, bound * max(b, floor), f"{name}: {what} {o:.3g} vs the baseline's {b:.3g}")


def rms_norm_math(x, gamma, eps=1e-6):
    dims = tuple(range(x.dim() - gamma.dim(), x.dim()))
    return x * torch.rsqrt(x.pow(2).mean(dim=dims, keepdim=True) + eps) * gamma


def add_rms_norm_math(x1, x2, gamma, eps=1e-6):
    s = x1 + x2
    return rms_norm_math(s, gamma, eps), s


def autograd_of(math, dtype, weights, *inputs):
    """The gradients of sum(w_i · output_i) by torch autograd of `math` with the inputs in
    `dtype` (float64: the gold)."""
    xs = [t.detach().to(dtype).requires_grad_() for t in inputs]
    outs = math(*xs)
    outs = outs if isinstance(outs, tuple) else (outs,)
    loss = sum((o * w.to(dtype)).sum() for o, w in zip(outs, weights) if w is not None)
    return torch.autograd.grad(loss, xs)


ROW_NORM_SHAPES = [
    ((4, 64), (64,)),
    ((2, 3, 896), (896,)),  # Qwen2-0.5B hidden
    ((2, 8, 4, 16), (16,)),  # Qwen3 q/k-norm: rows of tokens x heads
    ((5, 8, 16), (8, 16)),  # gamma over two dims
]


def logprob_entropy_math(logits, target, temperature, ignore_index):
    """logprob and entropy from the definition (verl's log_softmax + gather and entropy), with
    ignore_index rows 0: differentiable, for the gold gradient."""
    logp = torch.log_softmax(logits / temperature, -1)
    keep = target != ignore_index
    lp = torch.where(keep, logp.gather(-1, target.clamp(min=0).long()[..., None])[..., 0], 0.0)
    ent = torch.where(keep, -(logp.exp() * logp).sum(-1), 0.0)
    return lp, ent


class LogprobEntropyAutograd(unittest.TestCase):
    def test_logits_grad_matches_torch_autograd_of_the_formula(self):
        # loss = sum(w1 · logprob + w2 · entropy): logits.grad from logprob_entropy_grad, against
        # torch autograd of the float64 formula at T = 0.7 with an ignore_index row (its gradient
        # exactly 0) and w1 = 0 or w2 = 0 rows. Bars: the op's float32 bound at |z| <= 8 / 0.7,
        # H <= ln 1000, |w| <= 1 (2^-24 / T · (|w1| (2|z| + 11) + |w2| (2|z| (2 + H) + 11 H + 12))
        # ~ 3e-5) as atol, and one rounding of the 16-bit result (half an ULP: 2^-11 float16,
        # 2^-8 bfloat16 relative) with 2x room; a missing 1/T or one-hot term is off by far more.
        target = torch.tensor([3, -100, 999, 0, 512, 7], dtype=torch.int64)
        rtol = {torch.float16: 2.0**-10, torch.bfloat16: 2.0**-7, torch.float32: 0.0}
        for dtype in FLOATS:
            with self.subTest(dtype=dtype):
                logits = uniform((6, 1000), dtype, 95, -8.0, 8.0).requires_grad_()
                w1 = uniform((6,), torch.float32, 96, -1, 1)
                w2 = uniform((6,), torch.float32, 97, -1, 1)
                w1[4] = 0.0
                w2[5] = 0.0
                lp, ent, lse = OPS.logprob_entropy(logits, target, 0.7, -100)
                self.assertFalse(lse.requires_grad, "lse is not differentiable")
                (w1 * lp + w2 * ent).sum().backward()
                self.assertEqual(logits.grad.dtype, dtype)
                gold = autograd_of(
                    lambda x: logprob_entropy_math(x, target, 0.7, -100), torch.float64, [w1, w2], logits
                )[0]
                self.assertTrue(torch.equal(logits.grad[1], torch.zeros(1000, dtype=dtype)), "ignore_index row")
                torch.testing.assert_close(logits.grad.double(), gold, atol=1e-4, rtol=rtol[dtype])


class LargestTensor(torch.utils._python_dispatch.TorchDispatchMode):
    """The largest tensor (elements) any op dispatched below autograd produced while active."""

    def __init__(self):
        super().__init__()
        self.numel = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for o in out if isinstance(out, (tuple, list)) else (out,):
            if isinstance(o, torch.Tensor):
                self.numel = max(self.numel, o.numel())
        return out


class NVSizedTensors(torch.utils._python_dispatch.TorchDispatchMode):
    """Counts the buffers of at least `numel` elements that ops (below autograd) allocate while
    active: outputs whose storage is none of their inputs' (a view or an in-place op's result
    is not a new buffer)."""

    def __init__(self, numel):
        super().__init__()
        self.at_least, self.count = numel, 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        leaves = torch.utils._pytree.tree_leaves((args, kwargs))
        given = {t.untyped_storage().data_ptr() for t in leaves if isinstance(t, torch.Tensor)}
        out = func(*args, **kwargs)
        for o in torch.utils._pytree.tree_leaves(out):
            if isinstance(o, torch.Tensor) and o.numel() >= self.at_least and o.untyped_storage().data_ptr() not in given:
                self.count += 1
        return out


class RlLossHelpers(unittest.TestCase):
    """opgen_torch.rl's verl-named loss helpers against the float64 formula and its autograd."""

    def test_logprobs_and_entropy_from_logits_with_leading_dims(self):
        import opgen_torch.rl as rl

        # [batch 2, tokens 3, V 777]: values and logits.grad of sum(w1 · logprob + w2 · entropy);
        # bars as LogprobEntropyAutograd's (the op's float32 bound, one 16-bit rounding).
        labels = torch.tensor([[0, 776, 5], [100, 3, 512]])
        rtol = {torch.float16: 2.0**-10, torch.bfloat16: 2.0**-7, torch.float32: 0.0}
        for dtype in FLOATS:
            with self.subTest(dtype=dtype):
                logits = uniform((2, 3, 777), dtype, 41, -8.0, 8.0).requires_grad_()
                w1, w2 = uniform((2, 3), torch.float32, 42, -1, 1), uniform((2, 3), torch.float32, 43, -1, 1)
                lp = rl.logprobs_from_logits(logits, labels)
                ent = rl.entropy_from_logits(logits)
                self.assertEqual((lp.shape, lp.dtype, ent.shape, ent.dtype), ((2, 3), torch.float32, (2, 3), torch.float32))
                want_lp, want_ent = logprob_entropy_math(logits.detach().double(), labels, 1.0, -100)
                torch.testing.assert_close(lp.double(), want_lp, atol=2e-5, rtol=0)
                torch.testing.assert_close(ent.double(), want_ent, atol=2e-5, rtol=1e-6)
                (w1 * lp + w2 * ent).sum().backward()
                gold = autograd_of(lambda x: logprob_entropy_math(x, labels, 1.0, -100), torch.float64, [w1, w2], logits)[0]
                torch.testing.assert_close(logits.grad.double(), gold, atol=1e-4, rtol=rtol[dtype])
        with self.assertRaisesRegex(ValueError, "labels of shape \\(2, 2\\) must have logits' shape"):
            rl.logprobs_from_logits(torch.zeros(2, 3, 9), torch.zeros(2, 2, dtype=torch.int64))

    def test_linear_logprob_entropy_chunks_match_autograd_of_the_plain_formula(self):
        import opgen_torch.rl as rl

        # 40 tokens, hidden 16, V 300, chunks of 16 rows (the last one 8): logprob, entropy and
        # the gradients of hidden and lm_head_weight against torch autograd of the float64
        # formula on hidden @ weight.T; and no tensor as large as the [40, 300] logits is ever
        # made (forward or backward), while the same call with one chunk of 40 rows makes one.
        n, h, v, chunk = 40, 16, 300, 16
        hidden = uniform((2, 20, h), torch.float32, 51, -1, 1).requires_grad_()
        weight = uniform((v, h), torch.float32, 52, -1, 1).requires_grad_()
        target = torch.randint(0, v, (2, 20), generator=torch.Generator().manual_seed(53))
        target[1, 7] = -100
        w1, w2 = uniform((2, 20), torch.float32, 54, -1, 1), uniform((2, 20), torch.float32, 55, -1, 1)
        with LargestTensor() as seen:
            lp, ent = rl.linear_logprob_entropy(hidden, weight, target, chunk=chunk, temperature=0.7)
            (w1 * lp + w2 * ent).sum().backward()
        self.assertLessEqual(seen.numel, chunk * v, "a tensor larger than one chunk's logits")
        with LargestTensor() as whole:
            rl.linear_logprob_entropy(hidden.detach(), weight.detach(), target, chunk=n)
        self.assertGreaterEqual(whole.numel, n * v, "the check sees an unchunked call's logits")

        def math(x, w):
            return logprob_entropy_math(x @ w.t(), target, 0.7, -100)

        want_lp, want_ent = math(hidden.detach().double(), weight.detach().double())
        torch.testing.assert_close(lp.double(), want_lp, atol=1e-5, rtol=0)
        torch.testing.assert_close(ent.double(), want_ent, atol=1e-5, rtol=1e-6)
        gold_h, gold_w = autograd_of(math, torch.float64, [w1, w2], hidden, weight)
        torch.testing.assert_close(hidden.grad.double(), gold_h, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(weight.grad.double(), gold_w, atol=1e-5, rtol=1e-5)
        self.assertEqual((lp[1, 7].item(), ent[1, 7].item()), (0.0, 0.0), "ignore_index row")

    def test_vocab_parallel_with_one_rank_is_the_unsplit_helpers(self):
        import os
        import tempfile

        import torch.distributed as dist

        import opgen_torch.rl as rl

        # One rank (no process group, then a 1-rank gloo group): the combine over one shard
        # (logsumexp of one lse, w = 1, log w = 0) must give logprobs_from_logits's and
        # entropy_from_logits's bits, and logits.grad the bits of the op's own autograd
        # (logprob_entropy_grad with the op's lse and entropy), at T = 1 and 0.7 with an
        # ignore_index row; int32 targets too.
        labels = torch.tensor([[0, 776, -100], [100, 3, 512]])
        w1, w2 = uniform((2, 3), torch.float32, 45, -1, 1), uniform((2, 3), torch.float32, 46, -1, 1)

        def same_bits(group):
            for dtype in FLOATS:
                for temperature, target in ((1.0, labels), (0.7, labels.int())):
                    with self.subTest(dtype=dtype, temperature=temperature, group=group is not None):
                        logits = uniform((2, 3, 777), dtype, 44, -8.0, 8.0)
                        x = logits.clone().requires_grad_()
                        lp, ent = rl.vocab_parallel_logprob_entropy(x, target, 0, group, temperature)
                        (w1 * lp + w2 * ent).sum().backward()
                        self.assertTrue(torch.equal(lp, rl.logprobs_from_logits(logits, target, temperature)))
                        # entropy_from_logits has no ignore_index: its value on the other rows.
                        keep = target != -100
                        want_ent = rl.entropy_from_logits(logits, temperature)
                        self.assertTrue(torch.equal(ent[keep], want_ent[keep]))
                        self.assertEqual(ent[~keep].tolist(), [0.0], "ignore_index row")
                        y = logits.reshape(-1, 777).clone().requires_grad_()
                        want_lp, want_ent, _ = OPS.logprob_entropy(y, target.reshape(-1), temperature, -100)
                        (w1.reshape(-1) * want_lp + w2.reshape(-1) * want_ent).sum().backward()
                        self.assertTrue(torch.equal(x.grad, y.grad.view(x.shape)), "logits.grad")

        self.assertFalse(dist.is_initialized())
        same_bits(None)
        with tempfile.TemporaryDirectory() as tmp:
            dist.init_process_group("gloo", init_method=f"file://{os.path.join(tmp, 'store')}", rank=0, world_size=1)
            try:
                same_bits(dist.group.WORLD)
            finally:
                dist.destroy_process_group()

    def test_in_place_backward_gives_the_out_of_place_bits_without_an_n_by_v_buffer(self):
        import opgen_torch.rl as rl

        # logprob_entropy(..., inplace_backward=True) against the op's own autograd
        # (logprob_entropy_grad): the same logprob, entropy and gradient bits, for every dtype,
        # T = 0.7, an ignore_index row; the gradient within the plain formula's bars
        # (LogprobEntropyAutograd's); and the memory: the backward of the out-of-place path makes
        # one more [N, V] buffer than the in-place one: dlogits (counted below autograd by
        # NVSizedTensors: new buffers of N·V elements or more; both paths make one for x's
        # gradient through `x * 1`).
        labels = torch.tensor([[0, 776, -100], [100, 3, 512]])
        w1, w2 = uniform((2, 3), torch.float32, 47, -1, 1), uniform((2, 3), torch.float32, 48, -1, 1)
        rtol = {torch.float16: 2.0**-10, torch.bfloat16: 2.0**-7, torch.float32: 0.0}
        for dtype in FLOATS:
            with self.subTest(dtype=dtype):
                base = uniform((2, 3, 777), dtype, 49, -8.0, 8.0)
                results = {}
                for inplace in (False, True):
                    x = base.clone().requires_grad_()
                    logits = x * 1  # computed logits (a leaf is refused in place)
                    lp, ent = rl.logprob_entropy(logits, labels, 0.7, inplace_backward=inplace)
                    with NVSizedTensors(6 * 777) as made:
                        (w1 * lp + w2 * ent).sum().backward()
                    results[inplace] = (lp, ent, x.grad, made.count, logits)
                (lp0, ent0, g0, n0, _), (lp1, ent1, g1, n1, logits1) = results[False], results[True]
                self.assertTrue(torch.equal(lp0, lp1) and torch.equal(ent0, ent1), "forward bits")
                self.assertTrue(torch.equal(g0, g1), "the in-place gradient's bits")
                # The in-place logits hold dlogits now (dent and dlp of the ignore row: 0).
                self.assertTrue(torch.equal(logits1.detach(), g1), "logits overwritten with dlogits")
                self.assertEqual((n0, n1), (2, 1), "[N, V] buffers made by the backward")
                gold = autograd_of(lambda x: logprob_entropy_math(x, labels, 0.7, -100), torch.float64, [w1, w2], base)[0]
                torch.testing.assert_close(g1.double(), gold, atol=1e-4, rtol=rtol[dtype])

    def test_in_place_backward_refuses_a_leaf_a_strided_view_and_a_second_backward(self):
        import opgen_torch.rl as rl

        labels = torch.tensor([3, 5])
        leaf = uniform((2, 50), torch.float32, 59).requires_grad_()
        with self.assertRaisesRegex(ValueError, "logprob_entropy: inplace_backward would overwrite logits, a leaf tensor"):
            rl.logprob_entropy(leaf, labels, inplace_backward=True)
        wide = leaf * 1
        with self.assertRaisesRegex(ValueError, "logprob_entropy: inplace_backward writes dlogits over logits, which must be contiguous"):
            rl.logprob_entropy(torch.cat([wide, wide], 1)[:, ::2], labels, inplace_backward=True)
        # A leaf without grad, or no grad mode: nothing to overwrite, the plain op.
        lp, _ = rl.logprob_entropy(leaf.detach(), labels, inplace_backward=True)
        self.assertEqual(lp.shape, (2,))
        # retain_graph: the second backward would read dlogits as logits; autograd refuses it.
        logits = leaf * 1
        lp, ent = rl.logprob_entropy(logits, labels, inplace_backward=True)
        (lp.sum() + ent.sum()).backward(retain_graph=True)
        with self.assertRaisesRegex(RuntimeError, "modified by an inplace operation"):
            (lp.sum() + ent.sum()).backward()
        # Another node that saved the logits (exp saves its result) refuses them once overwritten.
        e = (leaf * 1).exp()
        lp, _ = rl.logprob_entropy(e, labels, inplace_backward=True)
        with self.assertRaisesRegex(RuntimeError, "modified by an inplace operation"):
            lp.sum().backward()

    def test_linear_logprob_entropy_in_place_backward_keeps_the_bits(self):
        import opgen_torch.rl as rl

        # The default (in place over each chunk's recomputed logits) against inplace_backward=False:
        # the same gradient bits, 16-row chunks of 40 rows.
        grads = []
        for inplace in (True, False):
            hidden = uniform((40, 16), torch.float32, 60, -1, 1).requires_grad_()
            weight = uniform((300, 16), torch.float32, 61, -1, 1).requires_grad_()
            target = torch.randint(0, 300, (40,), generator=torch.Generator().manual_seed(62))
            target[9] = -100
            lp, ent = rl.linear_logprob_entropy(hidden, weight, target, chunk=16, temperature=0.7, inplace_backward=inplace)
            (lp.sum() - 0.5 * ent.sum()).backward()
            grads.append((hidden.grad, weight.grad))
        self.assertTrue(torch.equal(grads[0][0], grads[1][0]) and torch.equal(grads[0][1], grads[1][1]))

    def test_linear_logprob_entropy_without_a_group_keeps_the_op_bits(self):
        import opgen_torch.rl as rl

        # One chunk of all rows: the logits are hidden @ weight.T as one matmul, so the results
        # must be the op's own bits on them (the shard combine over one rank adds no rounding).
        hidden = uniform((2, 20, 16), torch.float32, 56, -1, 1)
        weight = uniform((300, 16), torch.float32, 57, -1, 1)
        target = torch.randint(0, 300, (2, 20), generator=torch.Generator().manual_seed(58))
        target[0, 3] = -100
        lp, ent = rl.linear_logprob_entropy(hidden, weight, target, chunk=40, temperature=0.7)
        want = OPS.logprob_entropy(hidden.reshape(40, 16) @ weight.t(), target.reshape(-1), 0.7, -100)
        self.assertTrue(torch.equal(lp, want[0].view(2, 20)), "logprob")
        self.assertTrue(torch.equal(ent, want[1].view(2, 20)), "entropy")
        with self.assertRaisesRegex(ValueError, "linear_logprob_entropy: vocab_start_index 5 must be >= 0"):
            rl.linear_logprob_entropy(hidden, weight, target, vocab_start_index=5)

    def test_vocab_parallel_refusals(self):
        import torch.distributed as dist

        import opgen_torch.rl as rl

        logits, target = torch.zeros(2, 3, 9), torch.zeros(2, 3, dtype=torch.int64)
        cases = [
            ((logits, target, 4), "vocab_start_index 4 must be >= 0 \\(and 0 with one rank"),
            ((logits, target, -1), "vocab_start_index -1 must be >= 0"),
            ((logits, target[:, :2], 0), "target of shape \\(2, 2\\) must have logits_shard's shape \\(2, 3, 9\\)"),
            ((logits.double(), target, 0), "logits_shard of shape \\(2, 3, 9\\) must be float16, bfloat16 or float32"),
            ((logits, target.float(), 0), "target of shape \\(2, 3\\) must be int32 or int64"),
            ((torch.zeros(2, 0), target[0, :2], 0), "logits_shard of shape \\(2, 0\\) has no vocabulary columns"),
            ((logits, target, 0, object()), "a group was given but torch.distributed has no process group"),
        ]
        self.assertFalse(dist.is_initialized())
        for args, message in cases:
            with self.subTest(message=message):
                with self.assertRaisesRegex(ValueError, "vocab_parallel_logprob_entropy: " + message):
                    rl.vocab_parallel_logprob_entropy(*args)


class RowNormAutograd(unittest.TestCase):
    def test_rms_norm_gradients(self):
        for dtype in FLOATS:
            for shape, gshape in ROW_NORM_SHAPES:
                with self.subTest(dtype=dtype, shape=shape):
                    x = uniform(shape, dtype, 91).requires_grad_()
                    g = uniform(gshape, dtype, 92, 0.5, 1.5).requires_grad_()
                    w = uniform(shape, dtype, 93, -1, 1)
                    y, rstd = OPS.rms_norm(x, g, 1e-6)
                    self.assertFalse(rstd.requires_grad, "rstd is not differentiable")
                    (y * w).sum().backward()
                    gold = autograd_of(rms_norm_math, torch.float64, [w], x, g)
                    base = autograd_of(rms_norm_math, dtype, [w], x, g)
                    check_dual_baseline(self, "x.grad", x.grad, base[0], gold[0])
                    check_dual_baseline(self, "gamma.grad", g.grad, base[1], gold[1])

    def test_layer_norm_grad_matches_torch_autograd_of_layer_norm(self):
        # layer_norm_grad called directly with the forward's float32 mean and rstd, against torch
        # autograd of F.layer_norm (weight and bias) in float64 (the gold) and in the op's dtype
        # (the baseline). The eager forward layer_norm is another op's.
        eps = 1e-5
        for dtype in FLOATS:
            for shape, gshape in ROW_NORM_SHAPES + [((64, 1152), (1152,))]:  # + Qwen3-VL vision
                with self.subTest(dtype=dtype, shape=shape):
                    x = uniform(shape, dtype, 191)
                    g = uniform(gshape, dtype, 192, 0.5, 1.5)
                    b = uniform(gshape, dtype, 194, -1, 1)
                    dy = uniform(shape, dtype, 193, -1, 1)
                    dims = tuple(range(x.dim() - g.dim(), x.dim()))
                    x64 = x.double()
                    mean = x64.mean(dim=dims, keepdim=True)
                    rstd = torch.rsqrt((x64 - mean).pow(2).mean(dim=dims, keepdim=True) + eps)
                    dx, dg, db = OPS.layer_norm_grad(dy, x, mean.float(), rstd.float(), g)

                    def math(x, g, b):
                        return torch.nn.functional.layer_norm(x, g.shape, g, b, eps)

                    gold = autograd_of(math, torch.float64, [dy], x, g, b)
                    base = autograd_of(math, dtype, [dy], x, g, b)
                    for name, got, i in (("dx", dx, 0), ("dgamma", dg, 1), ("dbeta", db, 2)):
                        check_dual_baseline(self, name, got, base[i], gold[i])
                    if dtype != torch.float32:
                        # dbeta is a sum of 16-bit values: within 1 ULP of the rounded gold.
                        worst = int(ulp_distance(db, gold[2].to(dtype)).max())
                        self.assertLessEqual(worst, 1, f"dbeta: {worst} ULP")

    def test_layer_norm_forward_and_gradients(self):
        # The forward against F.layer_norm (f64 gold, the dtype's torch result as baseline), then
        # the gradients torch autograd gets through layer_norm's [backward] (layer_norm_grad) against
        # autograd of F.layer_norm, both with CANN's dual-baseline gate.
        eps = 1e-5
        for dtype in FLOATS:
            for shape, gshape in ROW_NORM_SHAPES + [((64, 1152), (1152,))]:  # + Qwen3-VL vision
                with self.subTest(dtype=dtype, shape=shape):
                    x = uniform(shape, dtype, 291).requires_grad_()
                    g = uniform(gshape, dtype, 292, 0.5, 1.5).requires_grad_()
                    b = uniform(gshape, dtype, 294, -1, 1).requires_grad_()
                    w = uniform(shape, dtype, 293, -1, 1)
                    y, mean, rstd = OPS.layer_norm(x, g, b, eps)
                    self.assertFalse(mean.requires_grad or rstd.requires_grad, "mean/rstd are not differentiable")

                    def math(x, g, b):
                        return torch.nn.functional.layer_norm(x, g.shape, g, b, eps)

                    with torch.no_grad():
                        y64 = math(x.double(), g.double(), b.double())
                        check_dual_baseline(self, "y", y.detach(), math(x, g, b), y64)
                    (y * w).sum().backward()
                    gold = autograd_of(math, torch.float64, [w], x, g, b)
                    base = autograd_of(math, dtype, [w], x, g, b)
                    for name, got, i in (("x.grad", x.grad, 0), ("gamma.grad", g.grad, 1), ("beta.grad", b.grad, 2)):
                        check_dual_baseline(self, name, got, base[i], gold[i])

    def test_add_rms_norm_gradients(self):
        for dtype in FLOATS:
            for shape, gshape in ROW_NORM_SHAPES[:3]:
                for use_sum in (True, False):
                    with self.subTest(dtype=dtype, shape=shape, x_sum_used=use_sum):
                        x1 = uniform(shape, dtype, 94).requires_grad_()
                        x2 = uniform(shape, dtype, 95).requires_grad_()
                        g = uniform(gshape, dtype, 96, 0.5, 1.5).requires_grad_()
                        w1 = uniform(shape, dtype, 97, -1, 1)
                        w2 = uniform(shape, dtype, 98, -1, 1) if use_sum else None
                        y, rstd, s = OPS.add_rms_norm(x1, x2, g, 1e-6)
                        self.assertFalse(rstd.requires_grad)
                        loss = (y * w1).sum() + ((s * w2).sum() if use_sum else 0)
                        loss.backward()
                        gold = autograd_of(add_rms_norm_math, torch.float64, [w1, w2], x1, x2, g)
                        base = autograd_of(add_rms_norm_math, dtype, [w1, w2], x1, x2, g)
                        check_dual_baseline(self, "x1.grad", x1.grad, base[0], gold[0])
                        check_dual_baseline(self, "x2.grad", x2.grad, base[1], gold[1])
                        check_dual_baseline(self, "gamma.grad", g.grad, base[2], gold[2])
                        self.assertTrue(torch.equal(x1.grad, x2.grad), "x1 and x2 get the same dx")

    def test_only_the_inputs_that_need_grad_get_one(self):
        x = uniform((4, 64), torch.float32, 99).requires_grad_()
        g = uniform((64,), torch.float32, 100, 0.5, 1.5)
        OPS.rms_norm(x, g, 1e-6)[0].sum().backward()
        self.assertIsNotNone(x.grad)
        self.assertIsNone(g.grad)

    def test_opcheck_with_grad(self):
        args = samples()
        for name in ("rms_norm", "add_rms_norm", "layer_norm"):
            with self.subTest(op=name):
                a = [t.clone().requires_grad_() if isinstance(t, torch.Tensor) else t for t in args[name]]
                torch.library.opcheck(getattr(OPS, name).default, a)

    def _loss(self, x1, x2, g, w):
        y, _, s = OPS.add_rms_norm(x1, x2, g, 1e-6)
        z, _ = OPS.rms_norm(y, g, 1e-6)
        return (z * w).sum() + (s * w).sum()

    def _grads(self, fn, dtype=torch.float32):
        args = [uniform((3, 5, 64), dtype, 101), uniform((3, 5, 64), dtype, 102), uniform((64,), dtype, 103, 0.5, 1.5)]
        args = [a.requires_grad_() for a in args]
        fn(*args, uniform((3, 5, 64), dtype, 104, -1, 1)).backward()
        return [a.grad for a in args]

    def test_compiled_backward_matches_eager(self):
        # aot_eager runs the same kernels in the same order: the same bits; inductor too (the
        # opgen ops are opaque to it, the glue's sum_to_size and casts are the only math it
        # may fuse).
        want = self._grads(self._loss)
        for backend in ("aot_eager", "inductor"):
            with self.subTest(backend=backend):
                torch._dynamo.reset()
                got = self._grads(torch.compile(self._loss, backend=backend, fullgraph=True))
                for name, a, b in zip(("x1", "x2", "gamma"), got, want):
                    torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-6, msg=f"{backend}: {name}")

    def test_functionalized_backward_matches_eager(self):
        # torch.func.functionalize of the forward, and AOTAutograd's functionalized forward and
        # backward graphs (what torch.compile hands a backend): the backward graph calls the
        # grad ops, and the gradients are eager's bits.
        from functorch.compile import make_boxed_func
        from torch._functorch.aot_autograd import aot_function

        want = self._grads(self._loss)
        got = self._grads(torch.func.functionalize(self._loss))
        for a, b in zip(got, want):
            self.assertTrue(torch.equal(a, b))
        graphs = []

        def keep(gm, _):
            graphs.append(gm)
            return make_boxed_func(gm)

        got = self._grads(aot_function(self._loss, fw_compiler=keep, bw_compiler=keep))
        for a, b in zip(got, want):
            self.assertTrue(torch.equal(a, b))
        self.assertEqual(len(graphs), 2)
        called = {str(n.target) for n in graphs[1].graph.nodes if n.op == "call_function"}
        self.assertTrue({"opgen.rms_norm_grad.default", "opgen.add_rms_norm_grad.default"} <= called, called)


# ---- rotary_mul's backward: rotary_mul_grad through torch autograd ----------------------------


def rotary_math(mode):
    def math(x, r1, r2):
        return x * r1 + rotate(x, mode) * r2

    return math


# (x, tables, modes): BSND with 1S1D tables, a head dim that is no multiple of 16 with per-batch
# tables (S11D-like, one table dim), and HF's BNSD with B1SD tables (half mode only: interleave
# takes tables broadcast over batch and heads).
ROTARY_SHAPES = [
    ((2, 8, 4, 64), (1, 8, 1, 64), ("half", "interleave")),
    ((3, 5, 2, 72), (3, 1, 1, 72), ("half", "interleave")),
    ((2, 4, 6, 16), (2, 1, 6, 16), ("half",)),
]


class RotaryAutograd(unittest.TestCase):
    def test_rotary_mul_gradients(self):
        # loss = sum(w · rotary_mul(x, r1, r2)): x.grad (and r1/r2's, reduced over their broadcast
        # dims, when they require grad: table_grads) from rotary_mul_grad, against torch autograd
        # of the same math in float64 (gold) and in the dtype (baseline), CANN's L0 dual-baseline.
        self.assertIn("rotary_mul", opgen_torch.ops.BACKWARD)
        for dtype in FLOATS:
            for xs, ts, modes in ROTARY_SHAPES:
                for mode in modes:
                    for table_grads in (True, False):
                        with self.subTest(dtype=dtype, shape=xs, mode=mode, table_grads=table_grads):
                            x = uniform(xs, dtype, 111).requires_grad_()
                            c = uniform(ts, dtype, 112, -1, 1).requires_grad_(table_grads)
                            s = uniform(ts, dtype, 113, -1, 1).requires_grad_(table_grads)
                            w = uniform(xs, dtype, 114, -1, 1)
                            with RecordOps() as rec:
                                (OPS.rotary_mul(x, c, s, mode) * w).sum().backward()
                            self.assertIn("opgen.rotary_mul_grad.default", rec.ops)
                            gold = autograd_of(rotary_math(mode), torch.float64, [w], x, c, s)
                            base = autograd_of(rotary_math(mode), dtype, [w], x, c, s)
                            check_dual_baseline(self, "x.grad", x.grad, base[0], gold[0])
                            if table_grads:
                                check_dual_baseline(self, "r1.grad", c.grad, base[1], gold[1])
                                check_dual_baseline(self, "r2.grad", s.grad, base[2], gold[2])
                            else:
                                self.assertIsNone(c.grad)
                                self.assertIsNone(s.grad)

    def test_rotary_mul_table_grads_is_requested_only_when_needed(self):
        # The backward op's table_grads attr follows r1/r2's requires_grad (no table reduction
        # for a training step whose cos/sin are constants, as HF's are).
        for tables in (False, True):
            with self.subTest(tables_require_grad=tables):
                x = uniform((1, 4, 2, 16), torch.float32, 115).requires_grad_()
                t = uniform((1, 4, 1, 16), torch.float32, 116, -1, 1).requires_grad_(tables)
                with RecordOps() as rec:
                    OPS.rotary_mul(x, t, t.detach().clone(), "half").sum().backward()
                grads = [c for c in rec.calls if c[0] == "opgen.rotary_mul_grad.default"]
                self.assertEqual([c[1]["table_grads"] for c in grads], [tables])


# ---- a broken twin rule inside a kernel is a RuntimeError, not the end of the process --------

MUTANT = r"""
// A gelu_erf kernel library that frees one queue tensor twice (twin rule 3).
#include <cstdint>
#include "kernel_operator.h"
using namespace AscendC;

extern "C" int opgen_twin_kernel_arg_count() { return 4; }  // x, y, workspace, tiling

extern "C" void opgen_twin_launch(uint8_t**) {
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> in;
    pipe.InitBuffer(in, 2, 256);
    LocalTensor<float> t = in.AllocTensor<float>();
    in.EnQue(t);
    LocalTensor<float> u = in.DeQue<float>();
    in.FreeTensor(u);
    in.FreeTensor(u);
}
"""


class TwinRules(unittest.TestCase):
    """The package is copied and its float32 gelu_erf kernel replaced by MUTANT, in a child
    Python (the extension can be loaded once per process)."""

    def test_broken_rule_raises_and_the_process_goes_on(self):
        import os
        import shutil
        import subprocess
        import sys
        import tempfile

        include = os.environ.get("OPGEN_TWIN_INCLUDE")
        if not include:
            self.fail("OPGEN_TWIN_INCLUDE (kernels/twin/include) is not set; scripts/check_torch_cpu.sh sets it")
        package = os.path.dirname(opgen_torch.__file__)
        with tempfile.TemporaryDirectory() as tmp:
            copy = os.path.join(tmp, "opgen_torch")
            shutil.copytree(package, copy)
            source = os.path.join(tmp, "mutant.cpp")
            with open(source, "w") as f:
                f.write(MUTANT)
            column = 2  # (float32) -> (float32): the third registered combination
            target = os.path.join(copy, "kernels", f"opgen_gelu_erf_c{column}.so")
            subprocess.run(
                ["g++", "-std=c++17", "-shared", "-fPIC", "-I", include, source, "-o", target,
                 f"-L{copy}", "-lopgen_twin", "-Wl,-rpath,$ORIGIN/.."],
                check=True,
            )
            child = r"""
import torch, opgen_torch
try:
    torch.ops.opgen.gelu_erf(torch.ones(64))
    print("NOT STOPPED")
except RuntimeError as e:
    print("RAISED", str(e).splitlines()[0])
y = torch.ops.opgen.gelu_erf(torch.ones(64, dtype=torch.float16))  # another kernel still runs
print("AFTER", float(y[0]))
y, _ = torch.ops.opgen.rms_norm(torch.ones(4, 64), torch.ones(64))
print("AFTER", float(y[0, 0]))
"""
            run = subprocess.run([sys.executable, "-c", child], env=dict(os.environ, PYTHONPATH=tmp),
                                 capture_output=True, text=True, timeout=300)
        self.assertEqual(run.returncode, 0, run.stderr)
        lines = run.stdout.splitlines()
        self.assertEqual(len(lines), 3, run.stdout + run.stderr)
        self.assertTrue(lines[0].startswith("RAISED opgen::gelu_erf: the CPU twin stopped the kernel: core 0: "), lines[0])
        self.assertIn("double FreeTensor", lines[0])
        self.assertAlmostEqual(float(lines[1].split()[1]), 0.8413, places=3)
        self.assertAlmostEqual(float(lines[2].split()[1]), 1.0, places=5)


# ---- opgen_torch.transformers on tiny random models (no weights downloaded) -------------------


class RecordOps(torch.utils._python_dispatch.TorchDispatchMode):
    """Records every op dispatched below autograd (the opgen ops that really ran)."""

    def __init__(self):
        super().__init__()
        self.ops = []
        self.calls = []  # (op, {argument name: value})

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops.append(str(func))
        # The dispatcher leaves out trailing arguments equal to their defaults: put them back.
        named = {a.name: a.default_value for a in func._schema.arguments if a.has_default_value()}
        named.update({a.name: v for a, v in zip(func._schema.arguments, args)})
        self.calls.append((str(func), {**named, **(kwargs or {})}))
        return func(*args, **(kwargs or {}))


def tiny(family, dtype=torch.float32):
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
    )
    if family == "qwen2":
        model = transformers.Qwen2ForCausalLM(transformers.Qwen2Config(**common))
    else:
        model = transformers.Qwen3ForCausalLM(transformers.Qwen3Config(head_dim=16, **common))
    # Random norm weights: ones would hide a weight that is not applied.
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.copy_(torch.rand(p.shape, generator=gen(len(name))) + 0.5)
    return model.to(dtype).eval()


class Transformers(unittest.TestCase):
    TOKENS = torch.tensor([[3, 17, 99, 5, 64, 2, 8, 120]])

    def check_family(self, family, apply, norms):
        # The norms alone here (the whole patch and training: test_train_qwen.py).
        import opgen_torch.transformers as patch

        model = tiny(family)
        with torch.no_grad():
            want = model(self.TOKENS).logits
            self.assertIs(apply(model, mlp=False, fuse_residual=False, rotary=False), model)
            self.assertEqual(list(patch.patched_modules(model).values()), ["rms_norm"] * norms)
            with RecordOps() as rec:
                got = model(self.TOKENS).logits
            self.assertEqual(rec.ops.count("opgen.rms_norm.default"), norms)
            torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
            self.assertEqual(
                model.generate(self.TOKENS, max_new_tokens=6, do_sample=False).tolist(),
                patch.revert(tiny(family)).generate(self.TOKENS, max_new_tokens=6, do_sample=False).tolist(),
            )
            patch.revert(model)
            self.assertEqual(patch.patched_modules(model), {})
            with RecordOps() as rec:
                again = model(self.TOKENS).logits
            self.assertNotIn("opgen.rms_norm.default", rec.ops)
            self.assertTrue(torch.equal(again, want))

    def test_qwen2_forward_parity(self):
        import opgen_torch.transformers as patch

        # 2 layers x (input, post-attention) + the final norm.
        self.check_family("qwen2", patch.apply_to_qwen2, 5)

    def test_qwen3_forward_parity(self):
        import opgen_torch.transformers as patch

        # Qwen3 adds q_norm and k_norm per layer.
        self.check_family("qwen3", patch.apply_to_qwen3, 9)

    def test_rounding_hf_is_passed_when_the_schema_has_it(self):
        import opgen_torch.transformers as patch

        for name in ("rms_norm", "add_rms_norm", "swiglu", "rotary_mul"):
            has = "rounding" in {a.name for a in getattr(OPS, name).default._schema.arguments}
            self.assertEqual(patch._rounding(getattr(OPS, name)), {"rounding": "hf"} if has else {}, name)

    def test_wrong_family_is_an_error(self):
        import opgen_torch.transformers as patch

        with self.assertRaisesRegex(ValueError, "no Qwen3RMSNorm"):
            patch.apply_to_qwen3(tiny("qwen2"))


if __name__ == "__main__":
    unittest.main(verbosity=2)
