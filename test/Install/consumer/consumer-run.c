/*===- consumer-run.c - training a step through DistOpt's C API -----------===*
 *
 * Part of the DistOpt project, under the Apache License v2.0 with LLVM
 * Exceptions. See LICENSE for license information.
 * SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
 *
 * consumer-run STEP.mlir STATE.npz DATA.npz: trains the step 2 steps from
 * the npz files (options by name), then 1 step and 1 more from the first
 * step's state handed back as in-memory arrays, and checks that both end
 * with the same loss and state, bit for bit. Prints each event and "ok";
 * a bad option must fail with a message and leave the process running.
 *
 *===----------------------------------------------------------------------===*/

#include "distopt-c/DistOpt.h"
#include "distopt-c/Run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static MlirStringRef str(const char *text) {
  return mlirStringRefCreate(text, strlen(text));
}

static void printEvent(MlirStringRef text, void *userData) {
  (void)userData;
  printf("event: %.*s\n", (int)text.length, text.data);
}

static void diagnostic(MlirStringRef text, void *userData) {
  (void)userData;
  printf("diagnostic: %.*s\n", (int)text.length, text.data);
}

static int setOption(DistoptRun run, const char *name, const char *value) {
  return mlirLogicalResultIsSuccess(
      distoptRunSetOption(run, str(name), str(value), diagnostic, NULL));
}

/* The result named `name`'s index, or -1. */
static intptr_t find(DistoptRun run, const char *name) {
  for (intptr_t i = 0; i < distoptRunGetNumResults(run); ++i) {
    MlirStringRef each = distoptRunGetResultName(run, i);
    if (each.length == strlen(name) && !memcmp(each.data, name, each.length))
      return i;
  }
  return -1;
}

static size_t resultBytes(DistoptRun run, intptr_t i) {
  size_t elements = 1;
  for (intptr_t d = 0; d < distoptRunGetResultRank(run, i); ++d)
    elements *= (size_t)distoptRunGetResultShape(run, i)[d];
  return elements * (distoptRunGetResultDtype(run, i).data[2] == '4' ? 4 : 8);
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: consumer-run STEP.mlir STATE.npz DATA.npz\n");
    return 2;
  }
  FILE *file = fopen(argv[1], "rb");
  if (!file)
    return 2;
  static char source[1 << 20];
  size_t size = fread(source, 1, sizeof(source), file);
  fclose(file);
  MlirContext context = distoptContextCreate();
  MlirModule module =
      distoptModuleParse(context, mlirStringRefCreate(source, size),
                         str(argv[1]), diagnostic, NULL);
  if (mlirModuleIsNull(module))
    return 1;

  /* A bad option fails with a message; the process goes on. */
  DistoptRun bad = distoptRunCreate();
  if (setOption(bad, "steps", "two") || setOption(bad, "no-such", "1")) {
    printf("a bad option was taken\n");
    return 1;
  }
  distoptRunDestroy(bad);

  /* Two steps from the files. */
  DistoptRun whole = distoptRunCreate();
  if (!setOption(whole, "state", argv[2]) ||
      !setOption(whole, "data", argv[3]) || !setOption(whole, "steps", "2") ||
      mlirLogicalResultIsFailure(
          distoptRunExecute(whole, module, printEvent, NULL, diagnostic, NULL)))
    return 1;

  /* One step, then one more from its state in memory. */
  DistoptRun first = distoptRunCreate();
  if (!setOption(first, "state", argv[2]) ||
      !setOption(first, "data", argv[3]) || !setOption(first, "steps", "1") ||
      mlirLogicalResultIsFailure(
          distoptRunExecute(first, module, NULL, NULL, diagnostic, NULL)))
    return 1;
  DistoptRun second = distoptRunCreate();
  if (!setOption(second, "data", argv[3]) || !setOption(second, "steps", "1"))
    return 1;
  for (intptr_t i = 0; i < distoptRunGetNumResults(first); ++i) {
    MlirStringRef name = distoptRunGetResultName(first, i);
    if (name.length == 4 && !memcmp(name.data, "loss", 4))
      continue;
    if (mlirLogicalResultIsFailure(distoptRunSetArray(
            second, DistoptArrayState, name, distoptRunGetResultDtype(first, i),
            distoptRunGetResultRank(first, i),
            distoptRunGetResultShape(first, i),
            distoptRunGetResultData(first, i), diagnostic, NULL)))
      return 1;
  }
  /* The hyperparameters (lr, ...) are state the step does not return. */
  if (!setOption(second, "state", argv[2]))
    return 1;
  if (mlirLogicalResultIsFailure(
          distoptRunExecute(second, module, NULL, NULL, diagnostic, NULL)))
    return 1;

  int mismatches = 0;
  for (intptr_t i = 0; i < distoptRunGetNumResults(whole); ++i) {
    MlirStringRef name = distoptRunGetResultName(whole, i);
    char key[256];
    snprintf(key, sizeof(key), "%.*s", (int)name.length, name.data);
    intptr_t j = find(second, key);
    if (!strcmp(key, "loss")) {
      /* The last loss of the whole run is the second run's only one. */
      const float *a = distoptRunGetResultData(whole, i);
      const float *b = distoptRunGetResultData(second, j);
      printf("loss after 2 steps: %g and %g\n", a[1], b[0]);
      mismatches += a[1] != b[0];
      continue;
    }
    if (j < 0 || resultBytes(whole, i) != resultBytes(second, j) ||
        memcmp(distoptRunGetResultData(whole, i),
               distoptRunGetResultData(second, j), resultBytes(whole, i))) {
      printf("state '%s' differs\n", key);
      ++mismatches;
    }
  }
  printf("%ld steps, %ld results\n", (long)distoptRunGetStepsDone(whole),
         (long)distoptRunGetNumResults(whole));
  distoptRunDestroy(whole);
  distoptRunDestroy(first);
  distoptRunDestroy(second);
  distoptModuleDestroy(module);
  distoptContextDestroy(context);
  if (mismatches)
    return 1;
  printf("ok\n");
  return 0;
}
