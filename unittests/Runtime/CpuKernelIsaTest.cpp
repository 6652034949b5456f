//===- CpuKernelIsaTest.cpp - libdistopt_cpu's kernels fit the CPU --------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The kernels libdistopt_cpu runs the steps' products on use the
// instruction sets the CPU offers (cpuid's features): OpenBLAS's core, as
// OpenBLAS itself reports it, is not below them (Debian's OpenBLAS 0.3.21
// chose its core by the CPU's model and ran its generic Prescott kernels on
// an AVX-512 CPU it did not know, ~4x slower); distopt_cpu_kernel_info
// names that core and LIBXSMM's target.
//
//===----------------------------------------------------------------------===//

#include "distopt/Runtime/CpuKernels.h"

#include "gtest/gtest.h"

#include <dlfcn.h>

#include <cstring>
#include <string>

namespace {
/// Levels of x86-64 vector instruction sets, as far as OpenBLAS's f32
/// kernels go.
enum Level { sse = 0, avx = 1, avx2 = 2, avx512 = 3 };

const char *const levelNames[] = {"sse", "avx", "avx2+fma",
                                  "avx512 (f, bw, vl, dq, cd)"};

/// The CPU's level, from its features (cpuid and the OS's saved registers).
Level getCpuLevel() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512cd"))
    return avx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return avx2;
  if (__builtin_cpu_supports("avx"))
    return avx;
  return sse;
}

/// The level of an OpenBLAS x86-64 core's kernels, by its name.
Level getCoreLevel(const std::string &core) {
  for (const char *name : {"SkylakeX", "Cooperlake", "SapphireRapids"})
    if (strcasecmp(core.c_str(), name) == 0)
      return avx512;
  for (const char *name : {"Haswell", "Zen", "Excavator"})
    if (strcasecmp(core.c_str(), name) == 0)
      return avx2;
  for (const char *name :
       {"Sandybridge", "Bulldozer", "Piledriver", "Steamroller"})
    if (strcasecmp(core.c_str(), name) == 0)
      return avx;
  return sse;
}

/// The core of the OpenBLAS this process runs (loaded by libdistopt_cpu),
/// as OpenBLAS reports it; "" where none is loaded.
std::string getLoadedOpenBlasCore() {
  void *handle = dlopen("libopenblas.so.0", RTLD_LAZY | RTLD_NOLOAD);
  if (!handle)
    return "";
  auto getCore =
      reinterpret_cast<char *(*)()>(dlsym(handle, "openblas_get_corename"));
  std::string core = getCore ? getCore() : "";
  dlclose(handle);
  return core;
}

// OpenBLAS's kernels are not below the CPU's instruction sets.
TEST(CpuKernelIsa, ProductsUseTheCpusInstructionSets) {
  // A call of libdistopt_cpu: the test links it, so it is loaded (and
  // OpenBLAS with it) before the test runs.
  float from = 1, to = 0;
  distopt_copy(&to, &from, sizeof(float));
  ASSERT_EQ(to, 1);
  std::string core = getLoadedOpenBlasCore();
  ASSERT_FALSE(core.empty()) << "no libopenblas.so.0 in the process";
  Level cpu = getCpuLevel(), kernels = getCoreLevel(core);
  EXPECT_GE(kernels, cpu) << "OpenBLAS runs its '" << core << "' kernels ("
                          << levelNames[kernels] << ") on a CPU with "
                          << levelNames[cpu];
}

// The kernel info names OpenBLAS's core, says nothing is below the CPU,
// and names LIBXSMM's target for the convolutions (LIBXSMM detects the CPU
// by its features too).
TEST(CpuKernelIsa, KernelInfoNamesTheKernels) {
  std::string info = distopt_cpu_kernel_info();
  std::string core = getLoadedOpenBlasCore();
  EXPECT_NE(info.find("products: openblas "), std::string::npos) << info;
  EXPECT_NE(info.find(" core " + core + " "), std::string::npos) << info;
  EXPECT_EQ(info.find("below the CPU"), std::string::npos) << info;
  size_t conv = info.find("; convolutions: libxsmm ");
  ASSERT_NE(conv, std::string::npos) << info;
  std::string arch = info.substr(conv + strlen("; convolutions: libxsmm "));
  if (getCpuLevel() == avx512) {
    bool avx512Arch = false;
    for (const char *name : {"skx", "clx", "cpx", "spr"})
      avx512Arch |= arch == name;
    EXPECT_TRUE(avx512Arch) << info;
  }
}
} // namespace
