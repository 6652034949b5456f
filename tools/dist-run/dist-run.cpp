//===- dist-run.cpp - train a step (single device or under mpirun) --------===//
//
//   dist-run MODULE.mlir --state=STATE.npz --data=BATCH.npz --steps=N
//            --out=OUT.npz [--entry=NAME]
//
// Compiles the training step from whatever stage it is in (train dialect,
// partitioned by a strategy, collectives lowered by dist-to-runtime, or the
// LLVM dialect after dist-lower-cpu) for the CPU, JIT-runs it N times
// feeding the updated state back, and writes the final state (gathered to
// rank 0) and every step's loss. Arrays are bound by `train.name`; under
// `mpirun -np K` every rank takes its block of each global array from the
// argument's `dist.sharding`, or, once lowering removed those, from the
// module's record of the step (`train.step`).
//
//===----------------------------------------------------------------------===//

#include "Npz.h"

#include "distopt/Conversion/Passes.h"
#include "distopt/Conversion/StepSignature.h"
#include "distopt/Dialect/Dist/IR/DistOps.h"
#include "distopt/Dialect/Train/IR/TrainOps.h"
#include "distopt/Dialect/Train/IR/TrainingStep.h"
#include "distopt/InitAll.h"
#include "distopt/Runtime/distrt.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/TargetSelect.h"

#include <chrono>
#if defined(__SSE__)
#include <xmmintrin.h>
#endif
#include <malloc.h>
#include <cmath>
#include <optional>
#include <random>
#include <cstring>

using namespace mlir;
namespace cl = llvm::cl;

extern "C" void distrt_mlir_init_backend(const char *backend);

static cl::opt<std::string> inputFile(cl::Positional, cl::Required,
                                      cl::desc("<training step .mlir>"));
static cl::opt<std::string> statePath(
    "state", cl::desc("npz with every param, opt_state and hyper array"));
static cl::opt<std::string> dataPath(
    "data", cl::desc("npz with every input and label array"));
static cl::opt<unsigned> numSteps("steps", cl::init(1),
                                  cl::desc("Steps to run (default 1)"));
static cl::opt<std::string> outPath(
    "out", cl::desc("npz to write: the final state and the losses"));
static cl::opt<std::string> initStatePath(
    "init-state",
    cl::desc("Write deterministic random state for the step to this npz "
             "(and the batch with --init-data), then exit"));
static cl::opt<std::string>
    initDataPath("init-data", cl::desc("Write a random batch to this npz"));
static cl::opt<uint64_t> seed("seed", cl::init(0),
                              cl::desc("Seed of --init-state/--init-data"));
static cl::opt<std::string> backendName(
    "backend", cl::init("auto"),
    cl::desc("Runtime backend: auto (mpi under an MPI launcher, else local), "
             "mpi or local; a module lowered with "
             "dist-to-runtime{backend=...} names its own"));
static cl::opt<bool> flushDenormals(
    "flush-denormals", cl::init(true),
    cl::desc("Run the step with subnormal floats flushed to zero (inputs and "
             "results, as TensorFlow and XLA do on CPUs): without it a step "
             "slows down as training makes values tiny (default true)"));
static cl::opt<std::string>
    entryName("entry", cl::desc("The step function (default: the one whose "
                                "arguments carry train.role)"));

namespace {
/// One argument or result of the step on this rank.
struct Binding {
  const train::StepSignature::Value *value;
  /// Per dim, the mesh axes the value is split over (null: whole).
  ArrayAttr split;
  RankedTensorType localType;
  std::vector<int64_t> globalShape;
  /// Where this rank's block starts in the global array.
  std::vector<int64_t> offsets;
  std::string dtype;
  distrun::Array local;
};

/// Fails with `message`, prefixed with the rank.
[[noreturn]] void fail(const llvm::Twine &message) {
  llvm::errs() << "dist-run: rank " << distrt_rank() << ": " << message
               << "\n";
  distrt_finalize();
  std::exit(1);
}

std::string getNpyType(Type element) {
  if (element.isF32())
    return "<f4";
  if (element.isF64())
    return "<f8";
  if (element.isInteger(32))
    return "<i4";
  if (element.isInteger(64))
    return "<i8";
  return "";
}

int64_t getElementBytes(const std::string &dtype) {
  return dtype[2] == '4' ? 4 : 8;
}

/// Copies the block of `global` at `offsets` with `localShape` (row-major)
/// into `local`, or back with `toGlobal`.
void copyBlock(distrun::Array &global, distrun::Array &local,
               ArrayRef<int64_t> offsets, bool toGlobal) {
  int64_t rank = local.shape.size();
  int64_t bytes = getElementBytes(local.dtype);
  int64_t count = local.getNumElements();
  std::vector<int64_t> index(rank, 0);
  for (int64_t i = 0; i < count; ++i) {
    int64_t at = 0;
    for (int64_t d = 0; d < rank; ++d)
      at = at * global.shape[d] + offsets[d] + index[d];
    char *g = global.bytes.data() + at * bytes;
    char *l = local.bytes.data() + i * bytes;
    std::memcpy(toGlobal ? g : l, toGlobal ? l : g, bytes);
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++index[d] < local.shape[d])
        break;
      index[d] = 0;
    }
  }
}

/// The offsets of rank `rank`'s block of a value split as `split` (per dim,
/// the mesh axes it is split over).
std::vector<int64_t> getBlockOffsets(ArrayAttr split,
                                     const train::StepSignature &step,
                                     int64_t rank,
                                     ArrayRef<int64_t> localShape) {
  ArrayRef<int64_t> meshShape = step.meshShape;
  std::vector<int64_t> coords(meshShape.size());
  for (int64_t d = meshShape.size() - 1, r = rank; d >= 0; --d) {
    coords[d] = r % meshShape[d];
    r /= meshShape[d];
  }
  std::vector<int64_t> offsets;
  for (auto [dim, axes] : llvm::enumerate(split.getAsRange<ArrayAttr>())) {
    int64_t index = 0;
    for (Attribute axis : axes) {
      int64_t a = step.getAxisIndex(cast<StringAttr>(axis).getValue());
      index = index * meshShape[a] + coords[a];
    }
    offsets.push_back(index * localShape[dim]);
  }
  return offsets;
}

/// A memref descriptor of rank R: allocated, aligned, offset, sizes,
/// strides (all 8-byte words).
std::vector<int64_t> describe(distrun::Array &array) {
  std::vector<int64_t> words = {int64_t(array.bytes.data()),
                                int64_t(array.bytes.data()), 0};
  llvm::append_range(words, array.shape);
  int64_t stride = 1;
  std::vector<int64_t> strides(array.shape.size());
  for (int64_t d = array.shape.size() - 1; d >= 0; --d) {
    strides[d] = stride;
    stride *= array.shape[d];
  }
  llvm::append_range(words, strides);
  return words;
}
} // namespace

/// The number of classes of the labels `label` holds: the class dim of the
/// cross-entropy that reads it.
static std::optional<int64_t> getNumClasses(Value label) {
  for (Operation *user : label.getUsers()) {
    if (auto loss = dyn_cast<train::CrossEntropyOp>(user))
      return cast<RankedTensorType>(loss.getLogits().getType())
          .getShape()
          .back();
    if (auto grad = dyn_cast<train::CrossEntropyBackwardOp>(user))
      return cast<RankedTensorType>(grad.getLogits().getType())
          .getShape()
          .back();
  }
  return std::nullopt;
}

/// True when `param` is the scale of a normalization (initialized to one).
static bool isNormScale(Value param) {
  return llvm::any_of(param.getUses(), [](OpOperand &use) {
    if (auto norm = dyn_cast<train::LayerNormOp>(use.getOwner()))
      return use.get() == norm.getWeight();
    if (auto norm = dyn_cast<train::BatchNormOp>(use.getOwner()))
      return use.get() == norm.getWeight();
    return false;
  });
}

/// A deterministic array for argument `value` of the step: parameters as
/// PyTorch initializes linear layers (uniform in +-1/sqrt(fan_in); vectors
/// zero, normalization scales one), optimizer state zero, hyper-parameters
/// 0.01 (integers 0), inputs standard normal, labels uniform classes.
static distrun::Array initialize(const train::StepSignature::Value &value,
                                 Value arg,
                                 ArrayRef<int64_t> shape,
                                 const std::string &dtype,
                                 std::mt19937_64 &random) {
  distrun::Array array;
  array.dtype = dtype;
  array.shape.assign(shape.begin(), shape.end());
  int64_t count = array.getNumElements();
  bool isFloat = dtype[1] == 'f';
  std::vector<double> values(count, 0.0);
  switch (*value.role) {
  case train::Role::param:
    if (shape.size() >= 2) {
      int64_t fanIn = count / shape[0];
      double bound = 1.0 / std::sqrt(double(fanIn));
      std::uniform_real_distribution<double> uniform(-bound, bound);
      for (double &v : values)
        v = uniform(random);
    } else if (isNormScale(arg)) {
      std::fill(values.begin(), values.end(), 1.0);
    }
    break;
  case train::Role::hyper:
    if (isFloat)
      std::fill(values.begin(), values.end(), 0.01);
    break;
  case train::Role::input: {
    std::normal_distribution<double> normal(0.0, 1.0);
    for (double &v : values)
      v = normal(random);
    break;
  }
  case train::Role::label: {
    std::optional<int64_t> classes = getNumClasses(arg);
    if (!classes)
      fail("cannot tell the range of the labels '" + value.name +
           "': no cross_entropy reads them");
    std::uniform_int_distribution<int64_t> uniform(0, *classes - 1);
    for (double &v : values)
      v = double(uniform(random));
    break;
  }
  default:
    break;
  }
  int64_t bytes = getElementBytes(dtype);
  array.bytes.resize(count * bytes);
  for (int64_t i = 0; i < count; ++i) {
    char *at = array.bytes.data() + i * bytes;
    if (dtype == "<f4") {
      float v = values[i];
      std::memcpy(at, &v, 4);
    } else if (dtype == "<f8") {
      std::memcpy(at, &values[i], 8);
    } else if (dtype == "<i4") {
      int32_t v = values[i];
      std::memcpy(at, &v, 4);
    } else {
      int64_t v = values[i];
      std::memcpy(at, &v, 8);
    }
  }
  return array;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::ParseCommandLineOptions(argc, argv, "DistOpt training-step runner\n");
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  // A step allocates and frees the same large buffers every time: keep
  // them in the heap instead of mapping fresh (zeroed, page-faulting)
  // memory for each (the transformer block spent ~15% of a step in page
  // faults).
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);

  DialectRegistry registry;
  dist::registerAllDialects(registry);
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  OwningOpRef<ModuleOp> module =
      parseSourceFile<ModuleOp>(inputFile, &context);
  if (!module)
    fail("cannot parse '" + inputFile + "'");

  // The backend: the module's (when lowered for one), else --backend.
  std::string backend = backendName;
  if (backend != "auto" && backend != "mpi" && backend != "local")
    fail("unknown --backend '" + backend + "' (expected auto, mpi or local)");
  if (auto built = (*module)->getAttrOfType<StringAttr>("distrt.backend")) {
    if (backend != "auto" && backend != built.getValue())
      fail("'" + inputFile + "' is built for the " + built.getValue() +
           " backend, not --backend=" + backend);
    backend = built.getValue().str();
  }
  distrt_mlir_init_backend(backend.c_str());
  int64_t rank = distrt_rank(), worldSize = distrt_size();

  // The step and how its arrays are laid out. Lowering removes the
  // function's roles, names and shardings and the mesh, so they are read
  // from the module's record (train.step), which dist-to-runtime and
  // dist-lower-cpu write and which is written here for a step not lowered
  // yet. `entry` is the step function while it is still one (--init-state
  // reads its ops).
  func::FuncOp entry;
  SmallVector<std::string> steps;
  module->walk([&](func::FuncOp func) {
    if (entryName.empty() ? train::TrainingStep::isTrainingStep(func)
                          : func.getSymName() == entryName) {
      entry = func;
      steps.push_back(func.getSymName().str());
    }
  });
  if (steps.size() > 1)
    fail("several functions are training steps (" + llvm::join(steps, ", ") +
         "): pick one with --entry");
  bool recorded = (*module)->hasAttr(train::TrainDialect::kStepAttrName);
  if (!entry && !recorded)
    fail(entryName.empty() ? "no function has train.role arguments"
                           : "no function '" + entryName + "'");
  if (!recorded &&
      failed(train::recordStepSignature(*module, entry.getSymName())))
    fail("cannot record the step (see the diagnostics above)");
  FailureOr<train::StepSignature> signature =
      train::readStepSignature(*module);
  if (failed(signature))
    fail("cannot read the step's record (see the diagnostics above)");
  const train::StepSignature &step = *signature;
  if (!entryName.empty() && step.entry != entryName)
    fail("'" + inputFile + "' records the step '" + step.entry +
         "', not --entry '" + entryName + "'");
  if (entry && entry.getSymName() != step.entry)
    entry = nullptr;
  std::string name = step.entry;
  bool partitioned = !step.meshShape.empty();
  int64_t devices = step.getNumDevices();
  if (devices != worldSize)
    fail(llvm::Twine("the step runs on ") + llvm::Twine(devices) +
         " device(s) but there " +
         (worldSize == 1 ? "is 1 process"
                         : "are " + llvm::Twine(worldSize) + " processes") +
         (partitioned ? "" : " (distribute it with a strategy first)"));
  auto bind = [&](const train::StepSignature::Value &value) {
    Binding binding;
    binding.value = &value;
    binding.localType = cast<RankedTensorType>(value.type);
    binding.dtype = getNpyType(binding.localType.getElementType());
    if (binding.dtype.empty()) {
      std::string element;
      llvm::raw_string_ostream(element) << binding.localType.getElementType();
      fail("'" + value.name + "' has element type " + element +
           ", which dist-run does not move (f32, f64, i32, i64)");
    }
    ArrayRef<int64_t> shape = binding.localType.getShape();
    binding.globalShape.assign(shape.begin(), shape.end());
    binding.offsets.assign(shape.size(), 0);
    if (ArrayAttr split = value.split) {
      binding.split = split;
      for (auto [dim, axes] : llvm::enumerate(split.getAsRange<ArrayAttr>()))
        binding.globalShape[dim] *= step.getGroupSize(axes);
      binding.offsets = getBlockOffsets(split, step, rank, shape);
    }
    binding.local.dtype = binding.dtype;
    binding.local.shape.assign(shape.begin(), shape.end());
    binding.local.bytes.resize(binding.local.getNumElements() *
                               getElementBytes(binding.dtype));
    return binding;
  };

  // --init-state / --init-data: write deterministic arrays of the global
  // shapes (rank 0) and stop.
  std::string error;
  if (!initStatePath.empty() || !initDataPath.empty()) {
    std::mt19937_64 random(seed);
    distrun::Arrays initState, initData;
    if (!entry)
      fail("--init-state and --init-data read the step's ops (the labels' "
           "range, normalization scales), which '" + inputFile +
           "' has lowered: write them from the module before lowering");
    for (const train::StepSignature::Value &value : step.arguments) {
      if (value.name.empty() || !value.role)
        fail("argument #" + llvm::Twine(value.index) +
             " has no train.name or train.role");
      Binding binding = bind(value);
      bool isData =
          value.role == train::Role::input || value.role == train::Role::label;
      (isData ? initData : initState)[value.name] =
          initialize(value, entry.getArgument(value.index),
                     binding.globalShape, binding.dtype, random);
    }
    if (rank == 0 && !initStatePath.empty() &&
        !distrun::writeNpz(initStatePath, initState, error))
      fail(error);
    if (rank == 0 && !initDataPath.empty() &&
        !distrun::writeNpz(initDataPath, initData, error))
      fail(error);
    distrt_finalize();
    return 0;
  }

  // Inputs.
  distrun::Arrays state, data;
  if (!statePath.empty() && !distrun::readNpz(statePath, state, error))
    fail(error);
  if (!dataPath.empty() && !distrun::readNpz(dataPath, data, error))
    fail(error);
  std::vector<Binding> args;
  for (const train::StepSignature::Value &value : step.arguments) {
    if (value.name.empty())
      fail("argument #" + llvm::Twine(value.index) + " has no train.name");
    args.push_back(bind(value));
    Binding &arg = args.back();
    bool isData =
        value.role == train::Role::input || value.role == train::Role::label;
    distrun::Arrays &source = isData ? data : state;
    std::string key = value.name;
    auto it = source.find(key);
    if (it == source.end())
      fail("'" + key + "' is missing from " +
           (isData ? "--data '" + dataPath : "--state '" + statePath) + "'");
    distrun::Array &global = it->second;
    if (global.dtype != arg.dtype || global.shape != arg.globalShape) {
      std::string want, got;
      for (int64_t s : arg.globalShape)
        want += (want.empty() ? "" : "x") + std::to_string(s);
      for (int64_t s : global.shape)
        got += (got.empty() ? "" : "x") + std::to_string(s);
      fail("'" + key + "' is " + global.dtype + " [" + got +
           "] but the step takes " + arg.dtype + " [" + want + "]");
    }
    copyBlock(global, arg.local, arg.offsets, /*toGlobal=*/false);
  }
  std::vector<Binding> results;
  for (const train::StepSignature::Value &value : step.results)
    results.push_back(bind(value));

  // Compile.
  PassManager pm(&context);
  train::buildCPUPipeline(pm, /*blas=*/true, /*approximateMath=*/true,
                          backend);
  if (failed(pm.run(*module)))
    fail("cannot compile the step (see the diagnostics above)");
  // The kernels library (OpenBLAS matmuls) sits next to the runtime, in
  // the lib directory beside this tool's; MLIR's runner utilities provide
  // the strided memref copies.
  std::string tool = llvm::sys::fs::getMainExecutable(
      argv[0], reinterpret_cast<void *>(&fail));
  SmallString<256> kernels(llvm::sys::path::parent_path(
      llvm::sys::path::parent_path(tool)));
  llvm::sys::path::append(kernels, "lib", "libdistopt_cpu.so");
  SmallVector<StringRef> libraries = {kernels, DISTOPT_MLIR_C_RUNNER_UTILS};
  // Optimize for this host's CPU: without a target machine, LLVM's
  // vectorizers see no vector registers.
  auto hostBuilder = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!hostBuilder)
    fail("cannot target this host: " +
         llvm::toString(hostBuilder.takeError()));
  auto host = hostBuilder->createTargetMachine();
  if (!host)
    fail("cannot target this host: " + llvm::toString(host.takeError()));
  ExecutionEngineOptions options;
  options.transformer = makeOptimizingTransformer(3, 0, host->get());
  options.sharedLibPaths = libraries;
  auto engine = ExecutionEngine::create(*module, options);
  if (!engine)
    fail("cannot JIT the step: " + llvm::toString(engine.takeError()));

  // Run. Subnormal operands cost x86 cores up to ~100 cycles per
  // operation: the transformer block's mirrored step went from 38 to 70 ms
  // over 50 steps as its softmax tails and Adam moments became subnormal.
  // (OpenBLAS's worker threads, started before this, keep their mode.)
#if defined(__SSE__)
  if (flushDenormals)
    _mm_setcsr(_mm_getcsr() | _MM_FLUSH_ZERO_ON | 0x0040 /*DAZ*/);
#endif
  std::vector<float> losses;
  // Long runs also get a progress line (on stderr) every tenth of the steps.
  auto runStart = std::chrono::steady_clock::now();
  unsigned progressEvery = numSteps >= 20 ? numSteps / 10 : 0;
  for (unsigned s = 0; s < numSteps; ++s) {
    std::vector<std::vector<int64_t>> descriptors;
    for (Binding &arg : args)
      descriptors.push_back(describe(arg.local));
    std::vector<int64_t> resultWords;
    for (Binding &result : results)
      resultWords.resize(resultWords.size() + 3 +
                         2 * result.local.shape.size());
    void *resultPtr = resultWords.data();
    std::vector<void *> pointers = {resultPtr};
    for (auto &words : descriptors)
      pointers.push_back(words.data());
    std::vector<void *> packed;
    for (void *&pointer : pointers)
      packed.push_back(&pointer);
    auto start = std::chrono::steady_clock::now();
    if (llvm::Error e = (*engine)->invokePacked("_mlir_ciface_" + name,
                                                packed))
      fail("the step failed: " + llvm::toString(std::move(e)));
    double ms = std::chrono::duration<double, std::milli>(
                    std::chrono::steady_clock::now() - start)
                    .count();
    // Read the results and feed the state back.
    int64_t *words = resultWords.data();
    float loss = 0;
    for (Binding &result : results) {
      int64_t resultRank = result.local.shape.size();
      char *aligned = reinterpret_cast<char *>(words[1]);
      int64_t offset = words[2];
      int64_t bytes = getElementBytes(result.dtype);
      std::memcpy(result.local.bytes.data(), aligned + offset * bytes,
                  result.local.bytes.size());
      void *allocated = reinterpret_cast<void *>(words[0]);
      bool ours = llvm::any_of(args, [&](Binding &arg) {
        return arg.local.bytes.data() == allocated;
      });
      if (!ours)
        std::free(allocated);
      words += 3 + 2 * resultRank;
      if (result.value->role == train::Role::loss && result.dtype == "<f4")
        loss = *reinterpret_cast<float *>(result.local.bytes.data());
      for (Binding &arg : args)
        if (arg.value->name == result.value->name &&
            arg.local.shape == result.local.shape)
          arg.local.bytes = result.local.bytes;
    }
    losses.push_back(loss);
    if (rank == 0)
      llvm::outs() << llvm::formatv("step {0}: loss {1:F6} ({2:F2} ms)\n",
                                    s + 1, loss, ms);
    if (rank == 0 && progressEvery && (s + 1) % progressEvery == 0) {
      double elapsed = std::chrono::duration<double>(
                           std::chrono::steady_clock::now() - runStart)
                           .count();
      llvm::outs().flush();
      llvm::errs() << llvm::formatv(
          "progress: {0}/{1} steps, {2:F1} s elapsed, about {3:F1} s left\n",
          s + 1, unsigned(numSteps), elapsed,
          elapsed / (s + 1) * (numSteps - s - 1));
    }
  }

  // Gather the state to rank 0 and write it.
  distrun::Arrays out;
  for (Binding &arg : args) {
    if (arg.value->role != train::Role::param &&
        arg.value->role != train::Role::opt_state)
      continue;
    distrun::Array global;
    global.dtype = arg.dtype;
    global.shape = arg.globalShape;
    global.bytes.resize(global.getNumElements() * getElementBytes(arg.dtype));
    ArrayAttr split = arg.split;
    for (int64_t r = 0; r < worldSize; ++r) {
      distrun::Array block = arg.local;
      if (r != 0 && rank == r &&
          distrt_send(arg.local.bytes.data(), arg.local.bytes.size(),
                      DISTRT_I8, 0, 1) != 0)
        fail(distrt_last_error());
      if (rank != 0)
        continue;
      if (r != 0 && distrt_recv(block.bytes.data(), block.bytes.size(),
                                DISTRT_I8, r, 1) != 0)
        fail(distrt_last_error());
      std::vector<int64_t> offsets =
          split ? getBlockOffsets(split, step, r, arg.local.shape)
                   : std::vector<int64_t>(arg.local.shape.size(), 0);
      copyBlock(global, block, offsets, /*toGlobal=*/true);
    }
    out[arg.value->name] = std::move(global);
  }
  distrun::Array lossArray;
  lossArray.dtype = "<f4";
  lossArray.shape = {int64_t(losses.size())};
  lossArray.bytes.resize(losses.size() * 4);
  std::memcpy(lossArray.bytes.data(), losses.data(), losses.size() * 4);
  out["loss"] = std::move(lossArray);
  if (rank == 0 && !outPath.empty() &&
      !distrun::writeNpz(outPath, out, error))
    fail(error);
  distrt_finalize();
  return 0;
}
