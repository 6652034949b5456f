/*===- consumer.c - a C program using DistOpt's C API ----------------------===*
 *
 * Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
 * See LICENSE for license information.
 * SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
 *
 * consumer-c STEP.mlir PIPELINE: parses the step, runs the pipeline,
 * prints the module and its cost report as JSON; with a bad pipeline it
 * prints the diagnostic it got and the module (unchanged) and exits 1.
 *
 *===----------------------------------------------------------------------===*/

#include "distopt-c/Dialects.h"
#include "distopt-c/DistOpt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void print(MlirStringRef text, void *userData) {
  fwrite(text.data, 1, text.length, (FILE *)userData);
}

static void diagnostic(MlirStringRef text, void *userData) {
  (void)userData;
  fprintf(stdout, "diagnostic: %.*s\n", (int)text.length, text.data);
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: consumer-c STEP.mlir PIPELINE\n");
    return 2;
  }
  FILE *file = fopen(argv[1], "rb");
  if (!file)
    return 2;
  static char source[1 << 20];
  size_t size = fread(source, 1, sizeof(source), file);
  fclose(file);

  MlirContext context = distoptContextCreate();
  MlirModule module = distoptModuleParse(
      context, mlirStringRefCreate(source, size),
      mlirStringRefCreate(argv[1], strlen(argv[1])), diagnostic, NULL);
  if (mlirModuleIsNull(module))
    return 1;
  if (mlirLogicalResultIsFailure(
          distoptModuleVerify(module, diagnostic, NULL)) ||
      mlirLogicalResultIsFailure(distoptModuleRunPipeline(
          module, mlirStringRefCreate(argv[2], strlen(argv[2])), diagnostic,
          NULL))) {
    /* The module as the failed pipeline left it: unchanged. */
    distoptModulePrint(module, false, print, stdout);
    distoptModuleDestroy(module);
    distoptContextDestroy(context);
    return 1;
  }
  distoptModulePrint(module, false, print, stdout);
  printf("\ncost report:\n");
  distoptModuleCostReport(module, mlirStringRefCreate("json", 4), print,
                          diagnostic, stdout);
  distoptModuleDestroy(module);
  distoptContextDestroy(context);
  return 0;
}
