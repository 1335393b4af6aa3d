"""Tests of the generated `opgen_torch` package's loader and wrappers, without an NPU, CANN or
a real torch: `torch` and `torch_npu` are stand-ins that record what the package does.

Usage: python3 test_package.py <dir holding the installed opgen_torch package>
(the `python/` directory that `cmake --install` of the generated torch/ fills).
"""

import importlib
import inspect
import os
import shutil
import subprocess
import sys
import tempfile
import types
import unittest
from pathlib import Path

INSTALLED = None  # set from argv


class FakeOps(types.SimpleNamespace):
    """torch.ops: load_library registers the `opgen` namespace with recording callables."""

    def __init__(self, events):
        super().__init__()
        self._events = events

    def load_library(self, path):
        self._events.append(("load_library", path))
        calls = self._events

        def make(name):
            def op(*args):
                calls.append(("call", name, args))
                return ("result of", name)

            return op

        # The package is being imported (it calls load_library from its body): its OPS is set.
        names = sys.modules["opgen_torch"].OPS
        self.opgen = types.SimpleNamespace(**{n: make(n) for n in names})


REGISTERED_AUTOGRAD = []


def install_fakes(events, torch_npu_fails=False):
    torch = types.ModuleType("torch")
    torch.ops = FakeOps(events)
    torch.Tensor = type("Tensor", (), {})
    # The package registers each backward op's autograd formula at import; recorded apart from
    # `events`, whose order the tests check.
    torch.library = types.SimpleNamespace(
        register_autograd=lambda name, backward, setup_context=None: REGISTERED_AUTOGRAD.append(name)
    )
    sys.modules["torch"] = torch
    if torch_npu_fails:
        sys.modules["torch_npu"] = None  # import raises ImportError
    else:
        npu = types.ModuleType("torch_npu")
        events.append(("import torch_npu",))
        sys.modules["torch_npu"] = npu
    return torch


class PackageTest(unittest.TestCase):
    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp(prefix="opgen-torch-pkg-"))
        self.install = self.tmp / "install"
        shutil.copytree(INSTALLED / "opgen_torch", self.install / "python" / "opgen_torch")
        self.vendor = self.install / "vendors" / "opgen"
        lib = self.vendor / "op_api" / "lib"
        lib.mkdir(parents=True)
        # A real (empty) shared library: the loader preloads it with ctypes.
        subprocess.run(["cc", "-shared", "-o", str(lib / "libcust_opapi.so"), "-x", "c", "/dev/null"], check=True)
        self.saved_env = dict(os.environ)
        os.environ.pop("OPGEN_INSTALL_DIR", None)
        os.environ["ASCEND_CUSTOM_OPP_PATH"] = "/elsewhere/vendors/x"
        self.saved_path = list(sys.path)
        sys.path.insert(0, str(self.install / "python"))
        self.events = []

    def tearDown(self):
        for name in ["opgen_torch", "opgen_torch.ops", "torch", "torch_npu"]:
            sys.modules.pop(name, None)
        os.environ.clear()
        os.environ.update(self.saved_env)
        sys.path[:] = self.saved_path
        shutil.rmtree(self.tmp)

    def test_import_sets_environment_and_loads_the_library_after_torch_npu(self):
        install_fakes(self.events)
        pkg = importlib.import_module("opgen_torch")
        self.assertEqual(pkg.install_dir(), self.install.resolve())
        opp = os.environ["ASCEND_CUSTOM_OPP_PATH"].split(os.pathsep)
        self.assertEqual(opp[0], str(self.vendor.resolve()))
        self.assertIn("/elsewhere/vendors/x", opp)
        self.assertIn(str(self.vendor.resolve() / "op_api" / "lib"), os.environ["LD_LIBRARY_PATH"].split(os.pathsep))
        kinds = [e[0] for e in self.events]
        self.assertEqual(kinds, ["import torch_npu", "load_library"], self.events)
        self.assertEqual(Path(self.events[1][1]), self.install.resolve() / "python" / "opgen_torch" / "libopgen_torch.so")
        # A second load does not register the ops twice.
        pkg.load()
        self.assertEqual([e[0] for e in self.events].count("load_library"), 1)

    def test_wrappers_pass_the_schema_arguments_through(self):
        install_fakes(self.events)
        pkg = importlib.import_module("opgen_torch")
        self.assertTrue(pkg.OPS)
        for name in pkg.OPS:
            wrapper = getattr(pkg, name)
            self.assertIn("Schema: opgen::" + name + "(", wrapper.__doc__)
            params = inspect.signature(wrapper).parameters
            args = [object() for _ in params]
            result = wrapper(*args)
            self.assertEqual(result, ("result of", name))
            self.assertEqual(self.events[-1], ("call", name, tuple(args)))
            # Defaults are the spec's: calling with the tensors alone passes them on.
            required = [p for p in params.values() if p.default is inspect.Parameter.empty]
            wrapper(*args[: len(required)])
            passed = self.events[-1][2]
            defaults = [p.default for p in params.values() if p.default is not inspect.Parameter.empty]
            self.assertEqual(list(passed[len(required):]), defaults)

    def test_missing_install_names_the_fix(self):
        install_fakes(self.events)
        shutil.rmtree(self.vendor)
        with self.assertRaises(FileNotFoundError) as cm:
            importlib.import_module("opgen_torch")
        self.assertIn("build-npu", str(cm.exception))
        self.assertIn("libcust_opapi.so", str(cm.exception))

    def test_torch_npu_import_failure_names_set_env(self):
        install_fakes(self.events, torch_npu_fails=True)
        with self.assertRaises(ImportError) as cm:
            importlib.import_module("opgen_torch")
        self.assertIn("set_env.sh", str(cm.exception))

    def test_install_dir_from_the_environment(self):
        install_fakes(self.events)
        other = self.tmp / "other"
        shutil.copytree(self.install / "vendors", other / "vendors")
        os.environ["OPGEN_INSTALL_DIR"] = str(other)
        pkg = importlib.import_module("opgen_torch")
        self.assertEqual(pkg.vendor_dir(), other / "vendors" / "opgen")
        self.assertEqual(os.environ["ASCEND_CUSTOM_OPP_PATH"].split(os.pathsep)[0], str(other / "vendors" / "opgen"))

    # ---- the CPU build (cargo xtask torch-cpu) beside the NPU one

    def add_cpu_library(self):
        lib = self.install / "python" / "opgen_torch" / "libopgen_torch_cpu.so"
        lib.write_bytes(b"")
        return lib.resolve()

    def test_cpu_build_without_torch_npu_loads_the_cpu_library(self):
        cpu = self.add_cpu_library()
        install_fakes(self.events, torch_npu_fails=True)
        pkg = importlib.import_module("opgen_torch")
        self.assertEqual(pkg.backend(), "cpu")
        self.assertEqual(self.events, [("load_library", str(cpu))])
        # The NPU environment is left alone.
        self.assertEqual(os.environ["ASCEND_CUSTOM_OPP_PATH"], "/elsewhere/vendors/x")

    def test_cpu_build_next_to_torch_npu_keeps_the_npu_path(self):
        self.add_cpu_library()
        install_fakes(self.events)
        pkg = importlib.import_module("opgen_torch")
        self.assertEqual(pkg.backend(), "npu")
        self.assertEqual([e[0] for e in self.events], ["import torch_npu", "load_library"])
        self.assertTrue(self.events[1][1].endswith("/libopgen_torch.so"), self.events)

    def test_backend_forced_by_the_environment(self):
        cpu = self.add_cpu_library()
        install_fakes(self.events)
        os.environ["OPGEN_TORCH_BACKEND"] = "cpu"
        pkg = importlib.import_module("opgen_torch")
        self.assertEqual(self.events[-1], ("load_library", str(cpu)))
        os.environ["OPGEN_TORCH_BACKEND"] = "gpu"
        with self.assertRaisesRegex(ValueError, "OPGEN_TORCH_BACKEND='gpu'"):
            pkg.backend()

    def test_npu_forced_without_torch_npu_names_set_env(self):
        self.add_cpu_library()
        install_fakes(self.events, torch_npu_fails=True)
        os.environ["OPGEN_TORCH_BACKEND"] = "npu"
        with self.assertRaises(ImportError) as cm:
            importlib.import_module("opgen_torch")
        self.assertIn("set_env.sh", str(cm.exception))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    INSTALLED = Path(sys.argv.pop(1)).resolve()
    unittest.main(verbosity=1)
