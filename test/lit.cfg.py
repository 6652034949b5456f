# -*- Python -*-
# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

import os

import lit.formats
from lit.llvm import llvm_config

config.name = "DISTOPT"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["CMakeLists.txt", "README.md", "lit.cfg.py", "lit.site.cfg.py", "lib", "Inputs"]

config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.distopt_obj_root, "test")

# Every FileCheck run scopes its variables to one CHECK-LABEL block.
config.environment["FILECHECK_OPTS"] = "-enable-var-scope --allow-unused-prefixes=false"
# (The tests' Python helpers import each other: no __pycache__ in the
# source tree.)
config.environment["PYTHONDONTWRITEBYTECODE"] = "1"
# dist-run's compile cache: one of the build's own, not the user's.
config.environment["DISTOPT_CACHE_DIR"] = os.path.join(
    config.distopt_obj_root, "test", "compile-cache")

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%distopt_src_root", config.distopt_src_root))
config.substitutions.append(("%examples", os.path.join(config.distopt_src_root, "examples")))
config.substitutions.append(("%python", config.python_executable))
config.substitutions.append(("%distopt_obj_root", config.distopt_obj_root))
# The collective runtime, and MPI's launcher when there is one (tests that
# run under it REQUIRE mpi).
config.substitutions.append(("%distrt_lib", config.distrt_lib))
config.substitutions.append(("%cpu_lib", config.cpu_lib))
config.substitutions.append(("%distopt_lib_dir", os.path.dirname(config.distrt_lib)))
if config.mpiexec and not config.mpiexec.endswith("NOTFOUND"):
    config.available_features.add("mpi")
    config.substitutions.append(("%mpirun", config.mpiexec))
# PyTorch (Debian's python3-torch, which the set-up installs) for the
# reference runs of the examples.
import subprocess
if subprocess.run([config.python_executable, "-c", "import torch"],
                  capture_output=True).returncode == 0:
    config.available_features.add("torch")
# The CUDA toolkit's ptxas for dist-lower-cuda's binaries and
# libdistopt_cuda for the link tests: none of it needs a GPU.
if config.cuda_toolkit and os.path.exists(
        os.path.join(config.cuda_toolkit, "bin", "ptxas")):
    config.available_features.add("ptxas")
    config.substitutions.append(("%cuda_toolkit", config.cuda_toolkit))
if os.path.exists(config.cuda_lib) and os.path.exists(config.distrt_nccl_lib):
    config.available_features.add("cuda-runtime")
    config.substitutions.append(("%cuda_lib", config.cuda_lib))
    config.substitutions.append(("%distrt_nccl_lib", config.distrt_nccl_lib))
# The fake CUDA libraries (test/lib/FakeCuda): %fake_cuda runs a command
# on them (the device paths without a GPU), its report at the path given.
if os.path.exists(os.path.join(config.fake_cuda_dir, "libcuda.so.1")):
    config.available_features.add("fake-cuda")
    config.substitutions.append(
        ("%fake_cuda", "env LD_LIBRARY_PATH=" + config.fake_cuda_dir +
         " DISTOPT_FAKE_CUDA_REPORT"))
# A sanitizer build (scripts/sanitize.sh): its libraries need the
# sanitizers' runtime in every program that links them.
if config.sanitize:
    config.available_features.add("sanitizer")
# A CUDA device (driver and GPU): the GPU tests (test/GPU) run there only.
def has_cuda_device():
    import ctypes
    try:
        driver = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    count = ctypes.c_int(0)
    return (driver.cuInit(0) == 0 and
            driver.cuDeviceGetCount(ctypes.byref(count)) == 0 and
            count.value > 0)
if has_cuda_device():
    config.available_features.add("cuda-device")
# mlir-runner's support libraries (printMemrefF32, ...).
config.substitutions.append(
    ("%mlir_lib_dir", os.path.join(os.path.dirname(config.llvm_tools_dir), "lib")))

llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP"])
# The sanitizer build's settings (scripts/sanitizers/env.sh; lit passes
# ASAN_OPTIONS and UBSAN_OPTIONS itself).
llvm_config.with_system_environment(
    ["LSAN_OPTIONS", "UCX_MEM_MMAP_HOOK_MODE", "HWLOC_PLUGINS_BLACKLIST"])
llvm_config.use_default_substitutions()

llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
tool_dirs = [config.distopt_tools_dir, config.llvm_tools_dir]
llvm_config.add_tool_substitutions(["dist-opt", "dist-run", "dist-compile"], tool_dirs)
