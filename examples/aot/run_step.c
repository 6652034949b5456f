/*===- run_step.c - train with a step compiled ahead of time --------------===*
 *
 * Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
 * See LICENSE for license information.
 * SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
 *
 * A host program for a library from dist-compile (one device, CPU or
 * CUDA):
 *
 *   dist-compile step.mlir -o libstep.so            # and libstep.h
 *   cc -std=c11 -I. -I<distopt>/include run_step.c -o run_step \
 *      -L. -lstep -Wl,-rpath,$PWD
 *   ./run_step STATE_DIR DATA_DIR STEPS OUT_DIR [--graph]
 *
 * For a step compiled with --device=cuda (link libdistopt_cuda too) the
 * arguments are copied to device buffers once and the state stays there:
 * each step's state results (device buffers the step allocated) become the
 * next step's arguments (a result in the step's workspace is copied into
 * its argument's buffer on the device), and only the loss comes back to
 * the host until
 * the end, when the state is copied back and written. Each step's line
 * gives its time (the host waits for the step when it reads the loss).
 * With --graph, the second step is captured as a CUDA graph and the steps
 * after it replay that graph (one launch each): a step whose capture is
 * refused (it allocates, or a state result lives in another argument's
 * buffer) runs launch by launch, and run_step says why on stderr.
 *
 * Every argument of the step is read from `STATE_DIR/<name>.npy` or, when
 * not there, `DATA_DIR/<name>.npy` (NumPy's format; dtype and shape must be
 * the step's: the tables of the header say which). It runs STEPS steps,
 * feeding each updated state result back into its argument, prints each
 * loss, and writes the final state (the param and opt_state arguments) to
 * `OUT_DIR/<name>.npy` and the losses to `OUT_DIR/loss.npy`. Every error
 * names the file and what is wrong, and exits with status 1.
 *
 * The header is included by name: compile with -I pointing at the
 * directory of the header dist-compile wrote, and -DSTEP_HEADER='"x.h"'
 * when it is not libstep.h.
 *
 *===----------------------------------------------------------------------===*/

/* clock_gettime under -std=c11. */
#define _POSIX_C_SOURCE 199309L

#ifndef STEP_HEADER
#define STEP_HEADER "libstep.h"
#endif
#include STEP_HEADER

#include "distopt/Runtime/distrt.h"
#include "distopt/Runtime/distrt_mlir.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if DISTOPT_STEP_DEVICES != 1
#error "run_step.c runs single-device steps (dist-run runs the others)"
#endif

#if DISTOPT_STEP_CUDA
#include "distopt/Runtime/CudaRuntime.h"
#endif

#define ENTRY_CONCAT(a, b) a##b
#define ENTRY_NAME(prefix, entry) ENTRY_CONCAT(prefix, entry)
#define PACKED ENTRY_NAME(_mlir__mlir_ciface_, DISTOPT_STEP_ENTRY)
#define ARGUMENTS ENTRY_NAME(DISTOPT_STEP_ENTRY, _arguments)
#define RESULTS ENTRY_NAME(DISTOPT_STEP_ENTRY, _results_info)

static void die(const char *format, ...) {
  va_list args;
  va_start(args, format);
  fprintf(stderr, "run_step: ");
  vfprintf(stderr, format, args);
  fprintf(stderr, "\n");
  va_end(args);
  exit(1);
}

/* The npy dtype of a table's element type. */
static const char *npy_dtype(const distopt_step_value *value) {
  static const char *names[][2] = {
      {"f32", "<f4"}, {"f64", "<f8"}, {"i32", "<i4"}, {"i64", "<i8"},
      {"i8", "|i1"},  {"i1", "|b1"},  {"f16", "<f2"}};
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); ++i)
    if (!strcmp(value->dtype, names[i][0]))
      return names[i][1];
  die("'%s' has element type %s, which run_step does not read", value->name,
      value->dtype);
  return NULL;
}

static int64_t num_elements(const distopt_step_value *value) {
  int64_t n = 1;
  for (int d = 0; d < value->rank; ++d)
    n *= value->shape[d];
  return n;
}

/* Reads `path` into `data` (num_elements(value) elements); 0 when the file
 * does not exist, 1 when read, exits on a malformed or mismatching file. */
static int read_npy(const char *path, const distopt_step_value *value,
                    void *data) {
  FILE *file = fopen(path, "rb");
  if (!file)
    return 0;
  unsigned char magic[8];
  if (fread(magic, 1, 8, file) != 8 || memcmp(magic, "\x93NUMPY", 6))
    die("'%s' is not a .npy file", path);
  size_t length = 0;
  unsigned char bytes[4] = {0};
  size_t width = magic[6] == 1 ? 2 : 4;
  if (magic[6] < 1 || magic[6] > 3 || fread(bytes, 1, width, file) != width)
    die("'%s': unknown .npy version %d", path, magic[6]);
  for (size_t i = width; i-- > 0;)
    length = length * 256 + bytes[i];
  char *header = calloc(length + 1, 1);
  if (!header || fread(header, 1, length, file) != length)
    die("'%s': truncated header", path);
  char expected[256];
  snprintf(expected, sizeof expected, "'descr': '%s'", npy_dtype(value));
  if (!strstr(header, expected))
    die("'%s': not %s (header: %s)", path, npy_dtype(value), header);
  if (strstr(header, "'fortran_order': True"))
    die("'%s': Fortran order; save it row-major", path);
  const char *shape = strstr(header, "'shape': (");
  if (!shape)
    die("'%s': no shape in the header", path);
  shape += strlen("'shape': (");
  for (int d = 0; d < value->rank; ++d) {
    char *end;
    long long size = strtoll(shape, &end, 10);
    if (end == shape || size != value->shape[d])
      die("'%s': dim %d is not %lld", path, d, (long long)value->shape[d]);
    shape = end + strspn(end, ", ");
  }
  if (*shape != ')')
    die("'%s': not of rank %d", path, value->rank);
  free(header);
  size_t count = (size_t)num_elements(value);
  if (fread(data, (size_t)value->element_bytes, count, file) != count)
    die("'%s': fewer than %zu elements", path, count);
  fclose(file);
  return 1;
}

static void write_npy(const char *path, const char *dtype, int rank,
                      const int64_t *shape, const void *data, size_t bytes) {
  char dict[256], dims[160] = "";
  for (int d = 0; d < rank; ++d) {
    char dim[24];
    snprintf(dim, sizeof dim, "%lld,%s", (long long)shape[d],
             rank > 1 && d + 1 < rank ? " " : "");
    strcat(dims, dim);
  }
  int n = snprintf(dict, sizeof dict,
                   "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }",
                   dtype, dims);
  /* Padded with spaces and a newline to a multiple of 64 bytes. */
  int total = (10 + n + 1 + 63) / 64 * 64;
  FILE *file = fopen(path, "wb");
  if (!file)
    die("cannot write '%s'", path);
  unsigned short length = (unsigned short)(total - 10);
  fwrite("\x93NUMPY\x01\x00", 1, 8, file);
  fputc(length & 0xff, file);
  fputc(length >> 8, file);
  fwrite(dict, 1, (size_t)n, file);
  for (int i = 10 + n; i < total - 1; ++i)
    fputc(' ', file);
  fputc('\n', file);
  if (fwrite(data, 1, bytes, file) != bytes || fclose(file))
    die("cannot write '%s'", path);
}

/* A memref descriptor as MLIR lays it out: allocated, aligned, offset,
 * sizes, strides. */
static int64_t *describe(const distopt_step_value *value, void *data) {
  int64_t *words = calloc(3 + 2 * (size_t)value->rank, sizeof(int64_t));
  words[0] = words[1] = (int64_t)(intptr_t)data;
  int64_t stride = 1;
  for (int d = value->rank; d-- > 0;) {
    words[3 + d] = value->shape[d];
    words[3 + value->rank + d] = stride;
    stride *= value->shape[d];
  }
  return words;
}

#if DISTOPT_STEP_CUDA
static void check_cuda(int status, const char *what) {
  if (status != 0)
    die("%s: %s", what, distopt_cuda_last_error());
}

static void *device_alloc(size_t bytes) {
  void *pointer = distopt_cuda_alloc(bytes);
  if (!pointer)
    die("allocating %zu device bytes: %s", bytes, distopt_cuda_last_error());
  return pointer;
}
#endif

#if DISTOPT_STEP_CUDA
/* Why the captured call's results cannot be replayed, or NULL: replaying
 * keeps every argument's buffer, so each state result must be its
 * argument's buffer or in the step's workspace (copied into it), and the
 * step must have allocated nothing. */
static const char *unreplayable(const int64_t *word, void *const *buffers,
                                int nargs) {
  for (int r = 0; r < DISTOPT_STEP_NUM_RESULTS; ++r) {
    const distopt_step_value *result = &RESULTS[r];
    void *allocated = (void *)(intptr_t)word[0];
    int held = 0;
    for (int i = 0; i < nargs; ++i) {
      if (allocated == buffers[i] && i != result->feeds)
        return "a state result is another argument's buffer";
      held |= allocated == buffers[i];
    }
    if (allocated && !held)
      return "the step allocated a result";
    word += 3 + 2 * result->rank;
  }
  return NULL;
}
#endif

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

int main(int argc, char **argv) {
  if (argc != 5 && !(argc == 6 && !strcmp(argv[5], "--graph")))
    die("usage: run_step STATE_DIR DATA_DIR STEPS OUT_DIR [--graph]");
  long steps = strtol(argv[3], NULL, 10);
  if (steps < 1)
    die("STEPS must be a positive number, got '%s'", argv[3]);
  enum {
    NARGS = DISTOPT_STEP_NUM_ARGUMENTS,
    NRESULTS = DISTOPT_STEP_NUM_RESULTS
  };
  void *buffers[NARGS];
  char path[4096];
  for (int i = 0; i < NARGS; ++i) {
    const distopt_step_value *arg = &ARGUMENTS[i];
    buffers[i] = malloc((size_t)(num_elements(arg) * arg->element_bytes) + 1);
    snprintf(path, sizeof path, "%s/%s.npy", argv[1], arg->name);
    if (!read_npy(path, arg, buffers[i])) {
      snprintf(path, sizeof path, "%s/%s.npy", argv[2], arg->name);
      if (!read_npy(path, arg, buffers[i]))
        die("no %s.npy in '%s' or '%s' (argument '%s', %s)", arg->name, argv[1],
            argv[2], arg->name, arg->role);
    }
  }
  distrt_mlir_init_backend(DISTOPT_STEP_BACKEND);
#if DISTOPT_STEP_CUDA
  /* The arguments to the device, once; `buffers` holds device pointers
   * from here on. */
  for (int i = 0; i < NARGS; ++i) {
    const distopt_step_value *arg = &ARGUMENTS[i];
    size_t bytes = (size_t)(num_elements(arg) * arg->element_bytes);
    void *device = device_alloc(bytes + 1);
    check_cuda(distopt_cuda_copy_to_device(device, buffers[i], bytes),
               "copying an argument to the device");
    free(buffers[i]);
    buffers[i] = device;
  }
#endif

  float *losses = calloc((size_t)steps, sizeof(float));
#if DISTOPT_STEP_CUDA
  int capture = argc == 6;
  void *graph = NULL;
  /* The captured call's result descriptors (a replay writes none). */
  int64_t *captured = NULL;
#else
  if (argc == 6)
    die("--graph: the step was compiled for the CPU (CUDA graphs need "
        "dist-compile --device=cuda)");
#endif
  for (long s = 0; s < steps; ++s) {
    int64_t *descriptors[NARGS];
    void *packed[1 + NARGS];
    size_t words = 0;
    for (int r = 0; r < NRESULTS; ++r)
      words += 3 + 2 * (size_t)RESULTS[r].rank;
    int64_t *results = calloc(words + 1, sizeof(int64_t));
    void *results_pointer = results;
    int n = 0;
    if (NRESULTS > 0)
      packed[n++] = &results_pointer;
    for (int i = 0; i < NARGS; ++i) {
      descriptors[i] = describe(&ARGUMENTS[i], buffers[i]);
      packed[n++] = &descriptors[i];
    }
    double start = now_ms();
#if DISTOPT_STEP_CUDA
    if (graph) {
      check_cuda(distopt_cuda_graph_launch(graph), "replaying the step");
      memcpy(results, captured, words * sizeof(int64_t));
    } else if (capture && s == 1) {
      capture = 0;
      check_cuda(distopt_cuda_capture_begin(), "capturing the step");
      PACKED(packed);
      graph = distopt_cuda_capture_end();
      const char *why = graph ? unreplayable(results, buffers, NARGS)
                              : distopt_cuda_last_error();
      if (why) {
        /* (Nothing captured ran: the step runs again, launch by launch.) */
        fprintf(stderr,
                "run_step: the step runs launch by launch, not as "
                "a captured graph: %s\n",
                why);
        distopt_cuda_graph_destroy(graph);
        graph = NULL;
        PACKED(packed);
      } else {
        check_cuda(distopt_cuda_graph_launch(graph), "replaying the step");
        captured = malloc((words + 1) * sizeof(int64_t));
        memcpy(captured, results, words * sizeof(int64_t));
      }
    } else {
      PACKED(packed);
    }
#else
    PACKED(packed);
#endif
#if DISTOPT_STEP_CUDA
    /* Results: each state result becomes its argument's device buffer (a
     * copy on the device when the step returned an argument's buffer or
     * one buffer twice), the loss comes to the host, and what no argument
     * holds any more is freed. */
    int64_t *word = results;
    void *next[NARGS], *seen[NRESULTS + 1];
    int nseen = 0;
    /* State results in the step's workspace, copied into their arguments'
     * buffers once every other result has been read from those buffers. */
    struct {
      int feeds;
      const char *data;
      size_t bytes;
    } in_place[NRESULTS + 1];
    int nin_place = 0;
    memcpy(next, buffers, sizeof next);
    for (int r = 0; r < NRESULTS; ++r) {
      const distopt_step_value *result = &RESULTS[r];
      void *allocated = (void *)(intptr_t)word[0];
      char *data = (char *)(intptr_t)word[1] + word[2] * result->element_bytes;
      size_t bytes = (size_t)(num_elements(result) * result->element_bytes);
      int held = 0;
      for (int i = 0; i < NARGS; ++i)
        held |= allocated == buffers[i];
      for (int k = 0; k < nseen; ++k)
        held |= allocated == seen[k];
      /* (A null allocated pointer: the result is in the step's workspace,
       * not ours to free.) */
      if (!held && allocated)
        seen[nseen++] = allocated;
      if (!strcmp(result->role, "loss")) {
        if (!strcmp(result->dtype, "f64")) {
          double loss;
          check_cuda(distopt_cuda_copy_to_host(&loss, data, sizeof loss),
                     "copying the loss to the host");
          losses[s] = (float)loss;
        } else {
          check_cuda(distopt_cuda_copy_to_host(&losses[s], data, sizeof(float)),
                     "copying the loss to the host");
        }
      }
      if (graph && result->feeds >= 0 && data != buffers[result->feeds]) {
        /* (Replayed: the argument keeps its buffer.) */
        check_cuda(
            distopt_cuda_copy_on_device(buffers[result->feeds], data, bytes),
            "copying a state result on the device");
      } else if (result->feeds >= 0 && data != buffers[result->feeds]) {
        if (!allocated) {
          /* (No buffer per step for it: its argument keeps its own.) */
          in_place[nin_place].feeds = result->feeds;
          in_place[nin_place].data = data;
          in_place[nin_place++].bytes = bytes;
        } else if (!held && data == (char *)allocated) {
          next[result->feeds] = allocated;
        } else {
          next[result->feeds] = device_alloc(bytes + 1);
          check_cuda(
              distopt_cuda_copy_on_device(next[result->feeds], data, bytes),
              "copying a state result on the device");
        }
      }
      word += 3 + 2 * result->rank;
    }
    for (int k = 0; k < nin_place; ++k)
      check_cuda(distopt_cuda_copy_on_device(buffers[in_place[k].feeds],
                                             in_place[k].data,
                                             in_place[k].bytes),
                 "copying a state result on the device");
    /* Free what no argument holds now: the step's other allocations and
     * the replaced argument buffers. */
    for (int k = 0; k < nseen; ++k) {
      int kept = 0;
      for (int i = 0; i < NARGS; ++i)
        kept |= seen[k] == next[i];
      if (!kept)
        check_cuda(distopt_cuda_free(seen[k]), "freeing a result");
    }
    for (int i = 0; i < NARGS; ++i) {
      int kept = 0;
      for (int j = 0; j < NARGS; ++j)
        kept |= buffers[i] == next[j];
      if (!kept)
        check_cuda(distopt_cuda_free(buffers[i]), "freeing an argument");
    }
    memcpy(buffers, next, sizeof next);
    check_cuda(distopt_cuda_synchronize(), "the step");
#else
    /* Results: state into its argument, the loss read, the step's own
     * allocations freed once each. */
    int64_t *word = results;
    void *freed[NRESULTS + 1];
    int nfreed = 0;
    for (int r = 0; r < NRESULTS; ++r) {
      const distopt_step_value *result = &RESULTS[r];
      void *allocated = (void *)(intptr_t)word[0];
      char *data = (char *)(intptr_t)word[1] + word[2] * result->element_bytes;
      size_t bytes = (size_t)(num_elements(result) * result->element_bytes);
      if (result->feeds >= 0 && data != buffers[result->feeds])
        memcpy(buffers[result->feeds], data, bytes);
      if (!strcmp(result->role, "loss"))
        losses[s] = !strcmp(result->dtype, "f64") ? (float)*(double *)data
                                                  : *(float *)data;
      int owned = allocated != NULL; /* null: in the step's workspace */
      for (int i = 0; i < NARGS; ++i)
        owned &= allocated != buffers[i];
      for (int f = 0; f < nfreed; ++f)
        owned &= allocated != freed[f];
      if (owned) {
        freed[nfreed++] = allocated;
        free(allocated);
      }
      word += 3 + 2 * result->rank;
    }
#endif
    double ms = now_ms() - start;
    for (int i = 0; i < NARGS; ++i)
      free(descriptors[i]);
    free(results);
    printf("step %ld: loss %.6f (%.3f ms)\n", s + 1, losses[s], ms);
  }
  for (int i = 0; i < NARGS; ++i) {
    const distopt_step_value *arg = &ARGUMENTS[i];
    if (strcmp(arg->role, "param") && strcmp(arg->role, "opt_state"))
      continue;
    size_t bytes = (size_t)(num_elements(arg) * arg->element_bytes);
    void *host = buffers[i];
#if DISTOPT_STEP_CUDA
    host = malloc(bytes + 1);
    check_cuda(distopt_cuda_copy_to_host(host, buffers[i], bytes),
               "copying the state to the host");
#endif
    snprintf(path, sizeof path, "%s/%s.npy", argv[4], arg->name);
    write_npy(path, npy_dtype(arg), arg->rank, arg->shape, host, bytes);
#if DISTOPT_STEP_CUDA
    free(host);
#endif
  }
#if DISTOPT_STEP_CUDA
  distopt_cuda_graph_destroy(graph);
  free(captured);
#endif
  snprintf(path, sizeof path, "%s/loss.npy", argv[4]);
  int64_t count = steps;
  write_npy(path, "<f4", 1, &count, losses, (size_t)steps * sizeof(float));
  distrt_finalize();
  return 0;
}
