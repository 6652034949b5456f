//===- sgemm_cores.cpp - sgemm rates of OpenBLAS's core and oneDNN --------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The micro benchmark of bench/README.md ("The CPU's kernels"): square
// sgemm, M = N = K from 512 to 4096, through the OpenBLAS the process
// loads (its core: OPENBLAS_CORETYPE or its own choice) on one thread, its
// own two threads, and two single-threaded calls on an OpenMP team (as
// distopt_matmul_f32 splits them); and oneDNN's dnnl_sgemm when
// libdnnl.so.2 is installed (its own OpenMP threads). 0.5 s per figure.
//
//   g++ -O2 -fopenmp bench/sgemm_cores.cpp -o /tmp/sgemm_cores -lopenblas -ldl
//   /tmp/sgemm_cores; OPENBLAS_CORETYPE=Prescott /tmp/sgemm_cores
//
//===----------------------------------------------------------------------===//

#include <cblas.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <dlfcn.h>
#include <omp.h>
#include <vector>
extern "C" void openblas_set_num_threads(int);
extern "C" char *openblas_get_corename();
typedef int (*dnnl_sgemm_t)(char, char, long, long, long, float, const float *,
                            long, const float *, long, float, float *, long);
template <class F> double rate(int n, F f) {
  f();
  auto t0 = std::chrono::steady_clock::now();
  int reps = 0;
  double s;
  do {
    f();
    ++reps;
    s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
            .count();
  } while (s < 0.5);
  return 2.0 * n * n * n * reps / s / 1e9;
}
int main(int argc, char **argv) {
  void *dnnl = dlopen("libdnnl.so.2", RTLD_NOW);
  auto dsg = dnnl ? (dnnl_sgemm_t)dlsym(dnnl, "dnnl_sgemm") : nullptr;
  printf("openblas core %s\n", openblas_get_corename());
  for (int n : {512, 1024, 2048, 4096}) {
    std::vector<float> a(n * n, 1.0f), b(n * n, 0.5f), c(n * n);
    openblas_set_num_threads(2);
    double ob2 = rate(n, [&] {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1,
                  a.data(), n, b.data(), n, 0, c.data(), n);
    });
    openblas_set_num_threads(1);
    double ob1 = rate(n, [&] {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1,
                  a.data(), n, b.data(), n, 0, c.data(), n);
    });
    double obs = rate(n, [&] {
#pragma omp parallel num_threads(2)
      {
        int h = n / 2 * omp_get_thread_num();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n / 2, n, n, 1,
                    a.data() + h * n, n, b.data(), n, 0, c.data() + h * n, n);
      }
    });
    double dn = dsg ? rate(n,
                           [&] {
                             dsg('N', 'N', n, n, n, 1, a.data(), n, b.data(), n,
                                 0, c.data(), n);
                           })
                    : 0;
    printf("n=%5d  openblas 1 thread %6.1f  2 threads %6.1f  split on team "
           "%6.1f  onednn(2 gomp threads) %6.1f GFLOP/s\n",
           n, ob1, ob2, obs, dn);
  }
}
