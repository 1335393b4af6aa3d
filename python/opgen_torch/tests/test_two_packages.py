"""Two generated packages with different project names in one process (scripts/check_two_packages.sh
installs their wheels first): both import, both register their own torch library, the same op in
each runs its own kernels, and neither sees the other's ops. References are the float64 formulas.
Also the wheel's import-time checks: where it finds its op package, and the version comparison."""

import math
import os
import sys
from pathlib import Path

import torch

import acme_torch
import beta_torch


def check(cond, what):
    if not cond:
        print(f"FAILED: {what}")
        sys.exit(1)
    print(f"ok: {what}")


def rms_norm_ref(x, g, eps=1e-6):
    xd = x.double()
    return xd * torch.rsqrt((xd * xd).mean(-1, keepdim=True) + eps) * g.double()


def gelu_tanh_ref(x):
    xd = x.double()
    return 0.5 * xd * (1 + torch.tanh(math.sqrt(2 / math.pi) * (xd + 0.044715 * xd**3)))


site = Path(acme_torch.__file__).resolve().parent.parent
check(site == Path(beta_torch.__file__).resolve().parent.parent and "site-packages" in str(site),
      f"both packages come from the venv's site-packages ({site}), not a build tree")
check((acme_torch.LIBRARY, beta_torch.LIBRARY) == ("acme", "beta"), "each package has its own torch library")
check((acme_torch.VENDOR, beta_torch.VENDOR) == ("acme_ops", "beta_ops"), "and its own vendor")

torch.manual_seed(0)
x = torch.randn(4, 96)
g = torch.rand(96) + 0.5
ref = rms_norm_ref(x, g)
for lib in (torch.ops.acme, torch.ops.beta):
    y, rstd = lib.rms_norm(x, g)
    err = (y.double() - ref).abs().max().item()
    # float32 output, rounded once from a float32 computation: a few ULP of |y| <= ~10.
    check(err < 1e-5, f"{lib}.rms_norm matches the float64 formula (max abs err {err:.2e})")
y = torch.ops.beta.gelu_tanh(x)
err = (y.double() - gelu_tanh_ref(x)).abs().max().item()
check(err < 1e-5, f"beta.gelu_tanh matches the float64 formula (max abs err {err:.2e})")
check(not hasattr(torch.ops.acme, "gelu_tanh"), "acme does not see beta's gelu_tanh")
yb = beta_torch.rms_norm(x.to(torch.bfloat16), g.to(torch.bfloat16))[0]
ya = acme_torch.rms_norm(x.to(torch.bfloat16), g.to(torch.bfloat16))[0]
check(torch.equal(ya, yb), "the same kernel in both packages gives the same bits (bfloat16)")

info = acme_torch.build_info()
check(info is not None and info["backend"] == "cpu" and info["torch"] == torch.__version__,
      f"the wheel records what it was built for: {info}")
check(acme_torch.version_mismatches() == [], "nothing differs in the environment it was built in")
problems = acme_torch.version_mismatches({"torch": "0.0.1", "torch_npu": "9.9", "cann": "1.0.RC1"})
print("  a wheel built elsewhere would say:", "; ".join(problems))
check(len(problems) == 3 and problems[0] == f"torch {torch.__version__}, built for 0.0.1"
      and problems[1].startswith("torch_npu ") and "built for 9.9" in problems[1]
      and problems[2].startswith("CANN ") and "built for 1.0.RC1" in problems[2],
      "every differing version is named with the one it was built for")

# The NPU wheel carries its op package in <package>/_cann_ops_custom (the CPU wheel has none):
# the package finds it there with nothing exported.
pkg = Path(acme_torch.__file__).resolve().parent
check(acme_torch.install_dir() == pkg.parent.parent, "without a bundled op package: the install-tree layout")
bundled = pkg / "_cann_ops_custom"
(bundled / "vendors" / "acme_ops").mkdir(parents=True)
try:
    check(acme_torch.install_dir() == bundled and acme_torch.vendor_dir() == bundled / "vendors" / "acme_ops",
          "with a bundled op package: its vendors/<vendor> is the vendor directory")
finally:
    import shutil

    shutil.rmtree(bundled)
check("OPGEN_INSTALL_DIR" not in os.environ, "and no variable was needed")
print("two packages: all checks passed")
