//===- dist-fuzz.cpp - libFuzzer target over the whole compiler -----------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// Each input is parsed as an MLIR module with DistOpt's dialects, verified
// and printed, checked with `train-verify`, distributed with one strategy
// pipeline picked by a hash of the input and printed again, then lowered
// with `dist-lower-cpu`. A module that is no valid step still goes through
// the CPU lowering (the conversion tests' inputs are functions of train
// ops, not steps).
// Diagnostics are swallowed: a failure with a diagnostic is a correct
// answer; only crashes, sanitizer reports and timeouts are findings.
// Besides libFuzzer's byte-level mutations, a custom one renames a
// dimension size throughout the input, so steps stay well formed and reach
// the strategies with unusual shapes.
//
// Environment, for reproducing a finding:
//   DIST_FUZZ_VERBOSE=1   print the diagnostics and the pipeline run
//   DIST_FUZZ_STRATEGY=N  use strategy N (an index into kStrategies) or
//                         `all` (every strategy with both lowerings, each on
//                         a fresh parse; the fuzz-regressions test runs the
//                         kept inputs that way)
//
// docs/guides/testing.md says how to build and run it.
//
//===----------------------------------------------------------------------===//

#include "distopt/Conversion/Passes.h"
#include "distopt/Dialect/Dist/Transforms/Passes.h"
#include "distopt/Dialect/Train/Transforms/Passes.h"
#include "distopt/InitAll.h"
#include "distopt/Support/ParseSource.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

using namespace mlir;

/// The strategies a step is distributed with before the CPU lowering; the
/// empty one lowers the single-device step.
static const char *const kStrategies[] = {
    "",
    "dist-mirrored{replicas=2}",
    "dist-zero{stage=1 replicas=2}",
    "dist-zero{stage=2 replicas=2}",
    "dist-zero{stage=3 replicas=2}",
    "dist-tensor-parallel{size=2}",
    "dist-tensor-parallel{size=2 sequence-parallel=true}",
    "dist-hybrid{dp=2 tp=2 zero=0}",
    "dist-hybrid{dp=2 tp=2 zero=1}",
    "dist-hybrid{dp=2 tp=2 zero=2}",
    "dist-hybrid{dp=2 tp=2 zero=3}",
    "dist-multi-worker-mirrored{hosts=2 devices=2}",
    "dist-pipeline{stages=2 microbatches=2 schedule=1f1b}",
    "dist-pipeline{stages=2 microbatches=1 schedule=zb-h1}",
    "dist-pipeline{stages=2 microbatches=2 schedule=interleaved "
    "virtual-stages=2}",
    "dist-hybrid{pp=2 dp=2 microbatches=2}",
    "dist-hybrid{pp=2 tp=2 zero=0 microbatches=2 schedule=zb-h1}",
    "dist-hybrid{pp=2 dp=2 zero=1 microbatches=2}",
    "dist-parameter-server{ps=2 workers=2 partitioner=fixed}",
    "dist-parameter-server{ps=1 workers=2}",
    "dist-parameter-server{ps=2 workers=2 mode=async}",
    // The evaluation function, distributed with its step (SPMD) or kept
    // single-device beside the placed programs.
    "train-derive-eval,dist-mirrored{replicas=2}",
    "train-derive-eval,dist-hybrid{dp=2 tp=2 zero=3}",
    "train-derive-eval,dist-hybrid{pp=2 dp=2 zero=1 microbatches=2}",
    "train-derive-eval,dist-parameter-server{ps=2 workers=2}",
    // Mixed precision before the strategy (and alone): 16-bit compute,
    // float32 master weights, static and dynamic loss scaling.
    "train-mixed-precision{compute=bf16}",
    "train-mixed-precision{compute=f16 loss-scale=dynamic},"
    "dist-mirrored{replicas=2}",
    "train-mixed-precision{compute=bf16 loss-scale=static},"
    "dist-hybrid{dp=2 tp=2 zero=3}",
    "train-mixed-precision{compute=f16 loss-scale=dynamic},"
    "dist-pipeline{stages=2 microbatches=2 schedule=1f1b}",
    "train-mixed-precision{compute=bf16},dist-parameter-server{ps=2 "
    "workers=2}",
    "train-mixed-precision{compute=f16 loss-scale=dynamic},"
    "dist-parameter-server{ps=2 workers=2 partitioner=fixed}",
    // Mixed precision after the strategy: on the partitioned step (SPMD),
    // on the module a placing strategy kept (placed again).
    "dist-zero{stage=3 replicas=2},"
    "train-mixed-precision{compute=f16 loss-scale=dynamic}",
    "dist-hybrid{dp=2 tp=2 zero=1},"
    "train-mixed-precision{compute=bf16 loss-scale=static}",
    "dist-tensor-parallel{size=2 sequence-parallel=true},"
    "train-mixed-precision{compute=bf16}",
    "dist-pipeline{stages=2 microbatches=2 schedule=1f1b},"
    "train-mixed-precision{compute=bf16}",
    "dist-hybrid{pp=2 dp=2 zero=1 microbatches=2},"
    "train-mixed-precision{compute=f16 loss-scale=dynamic}",
    "train-derive-eval,dist-parameter-server{ps=2 workers=2 "
    "partitioner=fixed},train-mixed-precision{compute=f16 "
    "loss-scale=dynamic}",
    // Activation recomputation, alone and before a strategy.
    "train-remat{policy=full}",
    "train-remat{policy=selective},dist-hybrid{dp=2 tp=2 zero=1}",
    "train-remat{policy=full},dist-pipeline{stages=2 microbatches=2}",
    "train-remat{policy=full checkpoints=layer},dist-mirrored{replicas=2}",
    "train-remat{policy=selective budget=100000},dist-hybrid{dp=2 tp=2}",
    // The planner: every plan for this machine built on a copy, the
    // fastest applied.
    "dist-auto{cluster=cpu}",
    "dist-auto{cluster=dgx-a100 mode=analytic}",
    // Whole-batch statistics under one microbatch with data parallelism,
    // and on one parameter-server worker.
    "dist-hybrid{pp=2 dp=2 microbatches=1}",
    "dist-parameter-server{ps=2 workers=1}",
    // Counts out of range: refused by the passes before anything is sized
    // by them (these grew to gigabytes or ran out of memory).
    "dist-pipeline{stages=2 microbatches=4294967297}",
    "dist-pipeline{stages=4294967296 microbatches=1}",
    "dist-pipeline{stages=2 microbatches=2 schedule=interleaved "
    "virtual-stages=4294967296}",
    "dist-mirrored{replicas=4294967296}",
    "dist-multi-worker-mirrored{hosts=65536 devices=65536}",
    "dist-parameter-server{ps=100000000 workers=1}",
    "dist-parameter-server{ps=1 workers=4294967297}",
    // dist-hybrid refuses counts that no step allows while its options are
    // parsed; these pass that check and meet the step's batch.
    "dist-hybrid{pp=65536 dp=1}",
    "dist-hybrid{pp=2 dp=32768 microbatches=2}",
};
static constexpr unsigned kNumStrategies = std::size(kStrategies);

/// The lowerings' variants, picked by other bits of the hash: the CPU's
/// (OpenBLAS calls or loops; polynomial or libm math; every op bracketed by
/// profile calls; every loop nest's parallel outermost loop on OpenMP),
/// then, for a quarter of the inputs, the GPU-mapped nests as CPU loops or
/// the CUDA lowering down to PTX (no ptxas). (The CPU variants keep their
/// share of the hash: an input's lowering did not change when the GPU ones
/// came.) Each is completed by getLowering with `ops-per-function` of 4, 8
/// or 16, picked by yet other bits, so that every input is also cut into
/// parts (dist-split-functions): the default, 1000 ops, keeps inputs of a
/// fuzzer's size whole, and the lit tests cover whole functions. (A
/// recreated reduction of constants read by a later part crashed the
/// verifier on an execution test, where no input the hash sent to a split
/// variant had one.)
static const char *const kLowerings[] = {
    "dist-lower-cpu{",
    "dist-lower-cpu{blas=false approximate-math=false "
    "parallel-min-iterations=1 ",
    "dist-lower-cpu{profile=true ",
    "dist-lower-cpu{gpu-mapped=true block-size=64 ",
    "dist-lower-cuda{format=isa ",
};
static constexpr unsigned kNumCPULowerings = 3;
static const unsigned kOpsPerFunction[] = {4, 8, 16};

/// The index into kLowerings `hash` picks.
static unsigned pickLowering(uint64_t hash) {
  if ((hash >> 40) % 4 == 3)
    return kNumCPULowerings +
           (hash >> 44) % (std::size(kLowerings) - kNumCPULowerings);
  return (hash >> 32) % kNumCPULowerings;
}

/// Variant `variant` of the lowerings, with the part size `hash` picks.
static std::string getLowering(unsigned variant, uint64_t hash) {
  unsigned ops = kOpsPerFunction[(hash >> 48) % std::size(kOpsPerFunction)];
  return (kLowerings[variant] + llvm::Twine("ops-per-function=") +
          llvm::Twine(ops) + "}")
      .str();
}

/// Inputs larger than this are not interesting and only slow the search.
static constexpr size_t kMaxInputSize = 256 * 1024;

static bool verbose() {
  static const bool flag = [] {
    const char *value = std::getenv("DIST_FUZZ_VERBOSE");
    return value && *value && StringRef(value) != "0";
  }();
  return flag;
}

/// All strategies (DIST_FUZZ_STRATEGY=all), one (=N), or by hash (unset).
static std::optional<std::string> strategyOverride() {
  static const std::optional<std::string> value =
      []() -> std::optional<std::string> {
    if (const char *v = std::getenv("DIST_FUZZ_STRATEGY"); v && *v)
      return std::string(v);
    return std::nullopt;
  }();
  return value;
}

static const DialectRegistry &getRegistry() {
  static const DialectRegistry *registry = [] {
    auto *r = new DialectRegistry();
    dist::registerAllDialects(*r);
    // dist-lower-cuda translates its kernels to LLVM IR.
    dist::registerAllTranslations(*r);
    return r;
  }();
  return *registry;
}

//===----------------------------------------------------------------------===//
// Guards against crashes inside upstream MLIR (not DistOpt's code)
//===----------------------------------------------------------------------===//

static bool isBareIdChar(char c) {
  return llvm::isAlnum(c) || c == '_' || c == '$' || c == '.';
}

/// Drops the whitespace and `//` comments the MLIR lexer skips.
static StringRef skipTrivia(StringRef text) {
  while (true) {
    text = text.ltrim(" \t\r\n");
    if (!text.starts_with("//"))
      return text;
    size_t eol = text.find('\n');
    text = eol == StringRef::npos ? StringRef() : text.drop_front(eol);
  }
}

/// Upstream MLIR 22 (22.1.8, as Debian ships it): Parser::parseDenseArrayAttr
/// (mlir/lib/AsmParser/AttributeParser.cpp) accepts any type with
/// `isIntOrIndexOrFloat()` as the element type of `array<...>`, then asks
/// `getIntOrFloatBitWidth()`, which is undefined for `index` (an assertion
/// in assert-enabled builds; in Debian's, it reads `index` as a FloatType
/// and segfaults in FloatType::getWidth). `array<index: 1>` and
/// `array<index>` crash `mlir-opt` itself. An alias (`!t = index` then
/// `array<!t>`) reaches the same code, so `array<!...` is rejected too.
/// docs/guides/testing.md lists this guard.
static bool mayHitDenseArrayIndexCrash(StringRef text) {
  for (size_t pos = text.find("array"); pos != StringRef::npos;
       pos = text.find("array", pos + 1)) {
    if (pos > 0 && isBareIdChar(text[pos - 1]))
      continue;
    StringRef rest = skipTrivia(text.drop_front(pos + 5));
    if (!rest.consume_front("<"))
      continue;
    rest = skipTrivia(rest);
    if (rest.starts_with("index") || rest.starts_with("!"))
      return true;
  }
  return false;
}

/// True when the input would crash upstream MLIR before DistOpt's code sees
/// it (each guard names the upstream bug): the tools' own check
/// (dist::findParserHazard: `array<index`, nesting deeper than 1000 levels,
/// which overflows the parser's stack) and the broader dense-array guard.
static bool hitsKnownUpstreamCrash(StringRef text) {
  return mayHitDenseArrayIndexCrash(text) ||
         dist::findParserHazard(text).has_value();
}

//===----------------------------------------------------------------------===//
// One input
//===----------------------------------------------------------------------===//

/// FNV-1a: a stable choice of strategy for a given input.
static uint64_t hashInput(StringRef text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text)
    h = (h ^ c) * 1099511628211ull;
  return h;
}

/// Prints `module` into a string: the dialects' printers are fuzzed too.
static void print(ModuleOp module) {
  std::string printed;
  llvm::raw_string_ostream os(printed);
  module.print(os);
}

/// Runs the textual `pipeline` on `module`.
static LogicalResult run(ModuleOp module, StringRef pipeline) {
  if (verbose())
    llvm::errs() << "dist-fuzz: " << pipeline << "\n";
  PassManager pm(module.getContext());
  if (failed(parsePassPipeline(pipeline, pm, llvm::errs())))
    llvm::report_fatal_error("dist-fuzz: cannot parse its own pipeline");
  return pm.run(module);
}

/// Parses `text` in a fresh context; prints it; if it is a well-formed step
/// distributes it with `strategy` (none when empty) and prints the result;
/// lowers it with `lowering`.
static void runOne(StringRef text, StringRef strategy, StringRef lowering) {
  MLIRContext context(getRegistry(), MLIRContext::Threading::DISABLED);
  ScopedDiagnosticHandler handler(&context, [](Diagnostic &diag) {
    if (verbose())
      llvm::errs() << diag.getLocation() << ": " << diag << "\n";
    return success();
  });

  // A copy: the MLIR lexer reads the NUL terminator past the end.
  auto sourceMgr = std::make_shared<llvm::SourceMgr>();
  sourceMgr->AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(text, "fuzz-input"), llvm::SMLoc());
  ParserConfig config(&context, /*verifyAfterParse=*/true);
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, config);
  if (!module)
    return;
  print(*module);

  // A well-formed step is distributed first; anything else still lowers
  // (the conversion tests' functions of train ops are no steps).
  if (!strategy.empty() &&
      succeeded(run(*module, "builtin.module(train-verify)"))) {
    if (failed(run(*module, ("builtin.module(" + strategy + ")").str())))
      return;
    print(*module);
  }
  (void)run(*module, ("builtin.module(" + lowering + ")").str());
}

//===----------------------------------------------------------------------===//
// Mutation
//===----------------------------------------------------------------------===//

extern "C" size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t maxSize);

/// A dimension size in a shaped type: digits between `<` or `x` and `x`
/// (`tensor<64x784xf32>`, `tensor<8x16x?`).
static bool isDimAt(StringRef text, size_t begin, size_t end) {
  return begin > 0 && (text[begin - 1] == '<' || text[begin - 1] == 'x') &&
         end < text.size() && text[end] == 'x';
}

/// Renames one dimension size everywhere it appears in a shaped type
/// (64 -> 3 in every `...x64x...`): most byte-level mutations of a type
/// break the step's consistency and stop at the verifier, while this one
/// keeps a step well formed and reaches the strategies with odd, unit,
/// zero and indivisible sizes. Returns the new size, or 0 when there is no
/// dimension or the result would not fit.
static size_t mutateDimensionSize(uint8_t *data, size_t size, size_t maxSize,
                                  unsigned seed) {
  StringRef text(reinterpret_cast<const char *>(data), size);
  SmallVector<StringRef> dims;
  for (size_t i = 0; i < size;) {
    if (!llvm::isDigit(text[i])) {
      ++i;
      continue;
    }
    size_t end = i;
    while (end < size && llvm::isDigit(text[end]))
      ++end;
    if (isDimAt(text, i, end) && end - i <= 9)
      dims.push_back(text.slice(i, end));
    i = end;
  }
  if (dims.empty())
    return 0;
  uint64_t from = 0;
  StringRef fromText = dims[seed % dims.size()];
  (void)fromText.getAsInteger(10, from);
  static const uint64_t kSizes[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 16, 17, 33};
  unsigned pick = (seed >> 8) % (std::size(kSizes) + 3);
  uint64_t to = pick < std::size(kSizes)        ? kSizes[pick]
                : pick == std::size(kSizes)     ? from + 1
                : pick == std::size(kSizes) + 1 ? (from ? from - 1 : 1)
                                                : from * 2;
  std::string toText = std::to_string(to);
  std::string out;
  out.reserve(size + 64);
  for (size_t i = 0; i < size;) {
    size_t end = i;
    while (end < size && llvm::isDigit(text[end]))
      ++end;
    if (end == i) {
      out.push_back(text[i++]);
      continue;
    }
    StringRef token = text.slice(i, end);
    out +=
        token == fromText && isDimAt(text, i, end) ? StringRef(toText) : token;
    i = end;
  }
  if (out.size() > maxSize)
    return 0;
  memcpy(data, out.data(), out.size());
  return out.size();
}

/// One mutation in eight renames a dimension size; the rest are libFuzzer's.
extern "C" size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size,
                                          size_t maxSize, unsigned seed) {
  if (seed % 8 == 0)
    if (size_t newSize = mutateDimensionSize(data, size, maxSize, seed >> 3))
      return newSize;
  return LLVMFuzzerMutate(data, size, maxSize);
}

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  train::registerTrainPasses();
  train::registerConversionPasses();
  train::registerCPUPipeline();
  train::registerCUDAPipeline();
  dist::registerDistPasses();
  dist::registerStrategyPipelines();
  (void)getRegistry();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  StringRef text(reinterpret_cast<const char *>(data), size);
  // -1: libFuzzer keeps the input out of the corpus.
  if (size > kMaxInputSize)
    return -1;
  if (hitsKnownUpstreamCrash(text)) {
    if (verbose())
      llvm::errs() << "dist-fuzz: rejected (known upstream MLIR crash)\n";
    return -1;
  }

  uint64_t hash = hashInput(text);
  std::string lowering = getLowering(pickLowering(hash), hash);
  std::optional<std::string> choice = strategyOverride();
  if (choice && *choice == "all") {
    for (const char *strategy : kStrategies)
      for (unsigned variant = 0; variant < std::size(kLowerings); ++variant)
        runOne(text, strategy, getLowering(variant, hash));
    return 0;
  }
  unsigned index = hash % kNumStrategies;
  if (choice) {
    unsigned value;
    if (StringRef(*choice).getAsInteger(10, value) || value >= kNumStrategies)
      llvm::report_fatal_error("dist-fuzz: DIST_FUZZ_STRATEGY is `all` or "
                               "an index below " +
                               llvm::Twine(kNumStrategies));
    index = value;
  }
  runOne(text, kStrategies[index], lowering);
  return 0;
}
