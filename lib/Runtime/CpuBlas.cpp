//===- CpuBlas.cpp - OpenBLAS, loaded with a core for the CPU's ISA -------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// See CpuBlas.h. OpenBLAS is loaded in this library's constructor, while
// the process has no threads of ours yet (OPENBLAS_CORETYPE is set for the
// load and removed after it), RTLD_LOCAL so that its symbols interpose on
// no other BLAS of the process (NumPy's libblas.so.3 is another copy of
// OpenBLAS, with a core of its own). Where libopenblas.so.0 was loaded
// before (its core chosen already), the products say so
// (distopt_cpu_kernel_info) and a warning names the variable that fixes it.
// bench/README.md ("The CPU's kernels") has the rates of each core.
//
// bf16 products go through oneDNN's dnnl_gemm_bf16bf16f32 (Debian's
// OpenBLAS 0.3.21 exports no sbgemm), loaded on first use where the CPU has
// bf16 products (cpuid), RTLD_LOCAL too. Debian's libdnnl.so.2 links GCC's
// libgomp: LLVM's libomp (our team's runtime, which also defines libgomp's
// entry points) is made global first, so that oneDNN's OpenMP calls bind to
// it -- inside our team's parallel region oneDNN then runs on the calling
// thread, and no second thread pool starts.
//
//===----------------------------------------------------------------------===//

#include "CpuBlas.h"

#include "distopt/Runtime/CpuKernels.h"

#include <dlfcn.h>
#include <omp.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

using namespace distopt::cpu;

namespace {
/// The instruction sets OpenBLAS's x86-64 cores are written for, lowest
/// first.
enum class Isa { sse2, sse3, ssse3, sse42, avx, avx2, avx512, avx512bf16 };

const char *getIsaName(Isa isa) {
  switch (isa) {
  case Isa::sse2:
    return "sse2";
  case Isa::sse3:
    return "sse3";
  case Isa::ssse3:
    return "ssse3";
  case Isa::sse42:
    return "sse4.2";
  case Isa::avx:
    return "avx";
  case Isa::avx2:
    return "avx2+fma";
  case Isa::avx512:
    return "avx512 (f, bw, vl, dq, cd)";
  case Isa::avx512bf16:
    return "avx512 with bf16";
  }
  return "?";
}

/// The CPU's instruction sets, from cpuid and the registers the OS saves
/// (libgcc's __builtin_cpu_supports checks both); never its model number.
Isa getCpuIsa() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512cd"))
    return __builtin_cpu_supports("avx512bf16") ? Isa::avx512bf16 : Isa::avx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return Isa::avx2;
  if (__builtin_cpu_supports("avx"))
    return Isa::avx;
  if (__builtin_cpu_supports("sse4.2"))
    return Isa::sse42;
  if (__builtin_cpu_supports("ssse3"))
    return Isa::ssse3;
  if (__builtin_cpu_supports("sse3"))
    return Isa::sse3;
  return Isa::sse2;
}

/// The OpenBLAS 0.3.21 core written for `isa` (its OPENBLAS_CORETYPE
/// name; Zen on AMD's AVX2 CPUs, as OpenBLAS chooses there), or null where
/// OpenBLAS's own choice is as good.
const char *getCoreFor(Isa isa) {
  switch (isa) {
  case Isa::avx512bf16:
  case Isa::avx512:
    // Cooperlake's f32 kernels are SkylakeX's, and 0.3.21's
    // OPENBLAS_CORETYPE does not know the name ("Core not found:
    // Cooperlake", then its choice by the CPU's model).
    return "SkylakeX";
  case Isa::avx2:
    return __builtin_cpu_is("amd") ? "Zen" : "Haswell";
  case Isa::avx:
    return "Sandybridge";
  case Isa::sse42:
    return "Nehalem";
  case Isa::ssse3:
    return "Core2";
  case Isa::sse3:
    return "Prescott";
  case Isa::sse2:
    return nullptr;
  }
  return nullptr;
}

/// The instruction set an OpenBLAS core's kernels use (the cores of
/// OpenBLAS's x86-64 DYNAMIC_ARCH builds, by their names).
Isa getCoreIsa(const char *core) {
  auto is = [&](std::initializer_list<const char *> names) {
    for (const char *name : names)
      if (strcasecmp(core, name) == 0)
        return true;
    return false;
  };
  if (is({"SkylakeX", "SapphireRapids"}))
    return Isa::avx512;
  if (is({"Cooperlake"}))
    return Isa::avx512bf16;
  if (is({"Haswell", "Zen", "Excavator"}))
    return Isa::avx2;
  if (is({"Sandybridge", "Bulldozer", "Piledriver", "Steamroller"}))
    return Isa::avx;
  if (is({"Nehalem", "Barcelona", "Bobcat"}))
    return Isa::sse42;
  if (is({"Core2", "Penryn", "Dunnington", "Atom"}))
    return Isa::ssse3;
  if (is({"Prescott", "Nano", "Opteron_SSE3"}))
    return Isa::sse3;
  return Isa::sse2;
}

/// The f32 products of a core: Cooperlake's are SkylakeX's.
Isa getF32Level(Isa isa) { return isa == Isa::avx512bf16 ? Isa::avx512 : isa; }

struct OpenBlas {
  SgemmFunction sgemm = nullptr;
  std::string error, info;

  OpenBlas() {
    Isa cpu = getCpuIsa();
    const char *wanted = getCoreFor(cpu);
    const char *user = getenv("OPENBLAS_CORETYPE");
    const char *names[] = {"libopenblas.so.0", DISTOPT_OPENBLAS_LIBRARY};
    bool loadedBefore = false;
    for (const char *name : names)
      if (void *handle = dlopen(name, RTLD_LAZY | RTLD_NOLOAD)) {
        loadedBefore = true;
        dlclose(handle);
        break;
      }
    bool setCore = !user && !loadedBefore && wanted;
    if (setCore)
      setenv("OPENBLAS_CORETYPE", wanted, /*overwrite=*/1);
    void *handle = nullptr;
    for (const char *name : names)
      if ((handle = dlopen(name, RTLD_NOW | RTLD_LOCAL)))
        break;
    if (setCore)
      unsetenv("OPENBLAS_CORETYPE");
    if (!handle) {
      error = std::string("cannot load OpenBLAS ('libopenblas.so.0', '") +
              DISTOPT_OPENBLAS_LIBRARY + "'): " + dlerror();
      info = "products: none (" + error + ")";
      return;
    }
    sgemm = reinterpret_cast<SgemmFunction>(dlsym(handle, "cblas_sgemm"));
    auto setThreads = reinterpret_cast<void (*)(int)>(
        dlsym(handle, "openblas_set_num_threads"));
    auto getCore =
        reinterpret_cast<char *(*)()>(dlsym(handle, "openblas_get_corename"));
    auto getConfig =
        reinterpret_cast<char *(*)()>(dlsym(handle, "openblas_get_config"));
    if (!sgemm || !setThreads || !getCore || !getConfig) {
      error = "the loaded OpenBLAS lacks cblas_sgemm or openblas_* functions";
      info = "products: none (" + error + ")";
      sgemm = nullptr;
      return;
    }
    // The team splits the work (CpuKernels.cpp): OpenBLAS's threads off.
    setThreads(1);
    std::string core = getCore(), version = "?";
    // "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH ...".
    if (const char *config = getConfig(); strncmp(config, "OpenBLAS ", 9) == 0)
      version = std::string(config + 9, strcspn(config + 9, " "));
    const char *reason =
        user           ? "OPENBLAS_CORETYPE"
        : loadedBefore ? "loaded before libdistopt_cpu, chosen by OpenBLAS"
        : setCore      ? "chosen by the CPU's features"
                       : "chosen by OpenBLAS";
    info = "products: openblas " + version + " core " + core + " (" + reason;
    Isa kernels = getCoreIsa(core.c_str());
    bool below = getF32Level(kernels) < getF32Level(cpu);
    if (below)
      info += std::string(", below the CPU's ") + getIsaName(cpu);
    info += ")";
    // Where the user chose the core, the info says so; otherwise once here.
    if (below && !user)
      fprintf(stderr,
              "libdistopt_cpu: warning: OpenBLAS (%s) runs its '%s' kernels "
              "on a CPU with %s: set OPENBLAS_CORETYPE=%s\n",
              reason, core.c_str(), getIsaName(cpu), wanted ? wanted : "?");
  }
};

/// Loaded with the library (its constructor runs before any kernel).
OpenBlas &getOpenBlas() {
  static OpenBlas openBlas;
  return openBlas;
}
[[maybe_unused]] const OpenBlas &loadedWithTheLibrary = getOpenBlas();
} // namespace

namespace {
/// oneDNN's bf16 product, loaded where the CPU multiplies bf16.
struct OneDnn {
  Bf16GemmFunction gemm = nullptr;
  std::string info;

  OneDnn() {
    if (const char *choice = getenv("DISTOPT_CPU_BF16_PRODUCTS")) {
      if (strcmp(choice, "f32") == 0) {
        info = "f32 sgemm of the converted operands "
               "(DISTOPT_CPU_BF16_PRODUCTS=f32)";
        return;
      }
      if (strcmp(choice, "onednn") != 0) {
        fprintf(stderr,
                "libdistopt_cpu: DISTOPT_CPU_BF16_PRODUCTS is '%s', expected "
                "'onednn' or 'f32'\n",
                choice);
        exit(1);
      }
    }
    __builtin_cpu_init();
    const char *feature = __builtin_cpu_supports("amx-bf16")     ? "amx_bf16"
                          : __builtin_cpu_supports("avx512bf16") ? "avx512_bf16"
                                                                 : nullptr;
    if (!feature) {
      info = "f32 sgemm of the converted operands (the CPU has neither "
             "avx512_bf16 nor amx_bf16)";
      return;
    }
    // oneDNN's OpenMP calls must bind to our libomp (see the top).
    Dl_info omp;
    if (dladdr(reinterpret_cast<void *>(&omp_get_max_threads), &omp) &&
        omp.dli_fname)
      dlopen(omp.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL);
    void *handle = dlopen("libdnnl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      info = std::string("f32 sgemm of the converted operands (cannot load "
                         "oneDNN: ") +
             dlerror() + ")";
      return;
    }
    gemm = reinterpret_cast<Bf16GemmFunction>(
        dlsym(handle, "dnnl_gemm_bf16bf16f32"));
    struct Version {
      int major, minor, patch;
      const char *hash;
    };
    auto getVersion =
        reinterpret_cast<const Version *(*)()>(dlsym(handle, "dnnl_version"));
    if (!gemm || !getVersion) {
      gemm = nullptr;
      info = "f32 sgemm of the converted operands (libdnnl.so.2 lacks "
             "dnnl_gemm_bf16bf16f32 or dnnl_version)";
      return;
    }
    const Version *version = getVersion();
    info = "onednn " + std::to_string(version->major) + "." +
           std::to_string(version->minor) + "." +
           std::to_string(version->patch) + " (" + feature + ")";
  }
};

OneDnn &getOneDnn() {
  static OneDnn oneDnn;
  return oneDnn;
}
} // namespace

Bf16GemmFunction distopt::cpu::getBf16Gemm() { return getOneDnn().gemm; }

std::string distopt::cpu::getSixteenBitProductInfo() {
  return "bf16: " + getOneDnn().info +
         "; f16: f32 sgemm of the converted operands";
}

SgemmFunction distopt::cpu::getSgemm() {
  OpenBlas &openBlas = getOpenBlas();
  if (!openBlas.sgemm) {
    fprintf(stderr, "libdistopt_cpu: %s\n", openBlas.error.c_str());
    exit(1);
  }
  return openBlas.sgemm;
}

const char *distopt_cpu_kernel_info() {
  static const std::string info =
      getOpenBlas().info + "; convolutions: " + getConvolutionKernelInfo();
  return info.c_str();
}
