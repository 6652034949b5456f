//===- dist-compile.cpp - a training step as a shared library and header --===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//   dist-compile STEP.mlir -o libstep.so [--header=step.h]
//                [--device=cpu|cuda] [--entry=NAME] [--backend=B]
//                [--opt-level=N] [--chip=sm_90]
//
// Ahead of time: compiles the step (train dialect, distributed by a
// strategy, or any later stage) as dist-run would (dist-lower-cpu, or
// dist-lower-cuda with --device=cuda) into a shared library linked against
// the runtime libraries, and writes a C header declaring its interface:
// the memref descriptors, the typed entry point, a packed entry point and
// tables of its arguments and results (names, roles, element types,
// shapes, which result feeds back into which argument). A host program
// (examples/aot/run_step.c) then trains with it without the JIT.
//
// Both files are written under temporary names and renamed: a failure
// leaves any earlier library and header as they were.
//
//===----------------------------------------------------------------------===//

#include "distopt/Runner/Library.h"
#include "distopt/Support/SafeOutput.h"

#include "distopt/Conversion/Passes.h"
#include "distopt/Conversion/StepSignature.h"
#include "distopt/Dialect/Dist/IR/PlacementSource.h"
#include "distopt/Dialect/Train/IR/TrainOps.h"
#include "distopt/Dialect/Train/IR/TrainingStep.h"
#include "distopt/InitAll.h"
#include "distopt/Support/ParseSource.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/InterleavedRange.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
namespace cl = llvm::cl;

static cl::OptionCategory category("dist-compile options");
static cl::opt<std::string> inputFile(cl::Positional, cl::Required,
                                      cl::desc("<step.mlir>"),
                                      cl::cat(category));
static cl::opt<std::string> outputFile("o", cl::Required,
                                       cl::value_desc("libstep.so"),
                                       cl::desc("The shared library to write"),
                                       cl::cat(category));
static cl::opt<std::string>
    headerFile("header", cl::value_desc("step.h"),
               cl::desc("The C header to write (default: the library's path "
                        "with .h for .so)"),
               cl::cat(category));
static cl::opt<distopt::runner::Device>
    device("device", cl::init(distopt::runner::Device::cpu),
           cl::desc("The device the step runs on"),
           cl::values(clEnumValN(distopt::runner::Device::cpu, "cpu",
                                 "CPUs (dist-lower-cpu; the default)"),
                      clEnumValN(distopt::runner::Device::cuda, "cuda",
                                 "NVIDIA GPUs (dist-lower-cuda)")),
           cl::cat(category));
static cl::opt<std::string>
    entryName("entry",
              cl::desc("The step function (default: the function "
                       "with train.role arguments)"),
              cl::cat(category));
static cl::opt<std::string> backendName(
    "backend",
    cl::desc("The collective backend the step starts: auto (mpi under an "
             "MPI launcher, else local), mpi, local, nccl (default: auto on "
             "cpu, nccl on cuda)"),
    cl::cat(category));
static cl::opt<unsigned> optLevel("opt-level",
                                  cl::init(train::kDefaultOptLevel),
                                  cl::desc("LLVM optimization level (0-3)"),
                                  cl::cat(category));
static cl::opt<std::string> chip("chip", cl::init("sm_90"),
                                 cl::desc("With --device=cuda: the GPU "
                                          "architecture of the kernels"),
                                 cl::cat(category));

[[noreturn]] static void fail(const llvm::Twine &message) {
  llvm::errs() << "dist-compile: " << message << "\n";
  std::exit(1);
}

/// The C element type of `type`.
static std::string getCType(Type type) {
  if (type.isF32())
    return "float";
  if (type.isF64())
    return "double";
  if (type.isF16() || type.isBF16())
    return "uint16_t";
  if (type.isInteger(1) || type.isInteger(8))
    return "int8_t";
  if (type.isInteger(32))
    return "int32_t";
  if (type.isInteger(64))
    return "int64_t";
  std::string text;
  llvm::raw_string_ostream(text) << type;
  fail("an argument or result has element type " + text +
       ", which the C header cannot declare");
}

/// `f32`, `i64`, ... for the tables.
static std::string getTypeName(Type type) {
  std::string text;
  llvm::raw_string_ostream(text) << type;
  return text;
}

/// The descriptor type of `type` (`distopt_memref_2d_f32`).
static std::string getDescriptorName(RankedTensorType type) {
  return llvm::formatv("distopt_memref_{0}d_{1}", type.getRank(),
                       getTypeName(type.getElementType()))
      .str();
}

/// `name` as a C identifier, unique among `used`.
static std::string getIdentifier(StringRef name, llvm::StringSet<> &used) {
  std::string id;
  for (char c : name)
    id += llvm::isAlnum(c) ? c : '_';
  if (id.empty() || llvm::isDigit(id[0]))
    id = "v_" + id;
  std::string unique = id;
  for (int i = 2; !used.insert(unique).second; ++i)
    unique = id + "_" + std::to_string(i);
  return unique;
}

static std::string quote(StringRef text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\')
      out += '\\';
    out += c;
  }
  return out + "\"";
}

/// The C header of `step`'s entry in a library compiled for `device`.
static std::string writeHeader(const train::StepSignature &step,
                               StringRef backend) {
  std::string text;
  llvm::raw_string_ostream os(text);
  std::string entry = step.entry;
  std::string guard = "DISTOPT_STEP_" + llvm::StringRef(entry).upper();
  for (char &c : guard)
    if (!llvm::isAlnum(c))
      c = '_';
  bool cuda = device == distopt::runner::Device::cuda;
  os << "/* Generated by dist-compile from "
     << llvm::sys::path::filename(inputFile)
     << ": the C interface of the training step `" << entry << "` in "
     << llvm::sys::path::filename(outputFile) << " (device "
     << (cuda ? "cuda" : "cpu") << ").\n"
     << " *\n"
     << " * " << entry << "(results, arguments...) runs one step. Each\n"
     << " * argument and result is a memref descriptor (MLIR's C interface):\n"
     << " * the allocated and aligned pointers, the offset, the sizes and the\n"
     << " * strides in elements; arguments are contiguous row-major buffers.\n"
     << (cuda ? " * The buffers are device memory (libdistopt_cuda's\n"
                " * distopt_cuda_alloc and copies), results are freed with\n"
                " * distopt_cuda_free. No two arguments may share memory:\n"
                " * the kernels update independent state in one launch.\n"
              : " * A result whose allocated pointer is not an argument's\n"
                " * was allocated by the step with malloc: free it.\n")
     << " * A result whose allocated pointer is null (the loss, a metric)\n"
     << " * lives in the step's workspace: read it before the next step,\n"
     << " * never free it.\n"
     << " * Before the first step the process starts the collective runtime:\n"
     << " * distrt_init(DISTOPT_STEP_BACKEND) (distopt/Runtime/distrt.h), and\n"
     << " * runs as one of DISTOPT_STEP_DEVICES processes (mpirun).\n"
     << " */\n"
     << "#ifndef " << guard << "_H\n#define " << guard << "_H\n\n"
     << "#include <stdint.h>\n\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n";
  os << "#define DISTOPT_STEP_ENTRY " << entry << "\n"
     << "#define DISTOPT_STEP_BACKEND " << quote(backend) << "\n"
     << "#define DISTOPT_STEP_DEVICES " << step.getNumDevices() << "\n"
     << "#define DISTOPT_STEP_CUDA " << (cuda ? 1 : 0) << "\n"
     << "#define DISTOPT_STEP_NUM_ARGUMENTS " << step.arguments.size() << "\n"
     << "#define DISTOPT_STEP_NUM_RESULTS " << step.results.size() << "\n\n";

  // One descriptor type per rank and element type.
  std::vector<RankedTensorType> types;
  llvm::StringSet<> declared;
  for (const auto *values : {&step.arguments, &step.results})
    for (const train::StepSignature::Value &value : *values)
      types.push_back(value.type);
  for (RankedTensorType type : types) {
    std::string name = getDescriptorName(type);
    if (!declared.insert(name).second)
      continue;
    std::string element = getCType(type.getElementType());
    os << "#ifndef " << llvm::StringRef(name).upper() << "\n#define "
       << llvm::StringRef(name).upper() << "\ntypedef struct {\n  " << element
       << " *allocated;\n  " << element << " *aligned;\n  int64_t offset;\n";
    if (type.getRank() > 0)
      os << "  int64_t sizes[" << type.getRank() << "];\n  int64_t strides["
         << type.getRank() << "];\n";
    os << "} " << name << ";\n#endif\n\n";
  }

  auto describe = [](const train::StepSignature::Value &value) {
    std::string role = value.role ? train::stringifyRole(*value.role).str()
                                  : std::string("none");
    std::string shape;
    llvm::raw_string_ostream(shape)
        << "[" << llvm::interleaved(value.type.getShape(), ", ") << "]";
    return role + " " + quote(value.name) + " " +
           getTypeName(value.type.getElementType()) + shape;
  };
  llvm::StringSet<> resultIds;
  if (!step.results.empty()) {
    os << "/* The results, in order. */\ntypedef struct {\n";
    for (const train::StepSignature::Value &value : step.results)
      os << "  " << getDescriptorName(value.type) << " "
         << getIdentifier(value.name, resultIds) << "; /* " << describe(value)
         << " */\n";
    os << "} " << entry << "_results;\n\n";
  }
  llvm::StringSet<> argIds;
  os << "/* One step (the function's C interface). */\nvoid _mlir_ciface_"
     << entry << "(";
  SmallVector<std::string> params;
  if (!step.results.empty())
    params.push_back(entry + "_results *results");
  for (const train::StepSignature::Value &value : step.arguments)
    params.push_back(getDescriptorName(value.type) + " *" +
                     getIdentifier(value.name, argIds) + " /* " +
                     describe(value) + " */");
  os << llvm::join(params, ",\n    ") << ");\n\n";
  os << "/* The same, packed for generic hosts: packed[0] points to the\n"
        " * results pointer (when there are results), packed[1 + i] to the\n"
        " * pointer to argument i's descriptor. */\nvoid _mlir__mlir_ciface_"
     << entry << "(void **packed);\n\n";

  // The interface as data.
  os << "#ifndef DISTOPT_STEP_VALUE\n#define DISTOPT_STEP_VALUE\n"
     << "typedef struct {\n  const char *name;\n  const char *role;\n"
        "  const char *dtype; /* f32, f64, i32, i64, ... */\n"
        "  int element_bytes;\n  int rank;\n  int64_t shape[8];\n"
        "  /* Results: the argument it feeds back into (the state a step "
        "returns\n   * updated), or -1. Arguments: -1. */\n  int feeds;\n"
        "} distopt_step_value;\n#endif\n\n";
  auto table = [&](StringRef name, ArrayRef<train::StepSignature::Value> values,
                   bool results) {
    os << "static const distopt_step_value " << entry << "_" << name << "["
       << std::max<size_t>(values.size(), 1) << "] = {\n";
    for (const train::StepSignature::Value &value : values) {
      if (value.type.getRank() > 8)
        fail("'" + value.name + "' has rank " +
             llvm::Twine(value.type.getRank()) +
             "; the header's tables hold 8 dims");
      int feeds = -1;
      bool state = value.role && (*value.role == train::Role::param ||
                                  *value.role == train::Role::opt_state);
      if (results && state)
        for (auto [i, arg] : llvm::enumerate(step.arguments))
          if (arg.isSamePart(value))
            feeds = i;
      Type element = value.type.getElementType();
      os << "  {" << quote(value.name) << ", "
         << quote(value.role ? train::stringifyRole(*value.role) : "none")
         << ", " << quote(getTypeName(element)) << ", "
         << std::max<unsigned>(1, element.getIntOrFloatBitWidth() / 8) << ", "
         << value.type.getRank() << ", {"
         << llvm::interleaved(value.type.getShape(), ", ") << "}, " << feeds
         << "},\n";
    }
    os << "};\n\n";
  };
  table("arguments", step.arguments, false);
  table("results_info", step.results, true);
  os << "#ifdef __cplusplus\n}\n#endif\n\n#endif /* " << guard << "_H */\n";
  return text;
}

static void writeFile(const std::string &path, StringRef text) {
  distopt::PartialFile file;
  std::string error;
  if (!file.create(path, error) ||
      !file.write(text.data(), text.size(), error) || !file.commit(error))
    fail("cannot write '" + path + "': " + error);
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "DistOpt's ahead-of-time compiler: a training step as a shared library "
      "and a C header\n");
  if (optLevel > 3)
    fail("--opt-level must be 0 to 3, got " + llvm::Twine(optLevel));
  std::string backend =
      backendName.empty()
          ? (device == distopt::runner::Device::cuda ? "nccl" : "auto")
          : backendName.getValue();
  if (!llvm::is_contained({"auto", "mpi", "local", "nccl"}, backend))
    fail("unknown --backend '" + backend +
         "' (expected auto, mpi, local or nccl)");
  if (backend == "nccl" && device != distopt::runner::Device::cuda)
    fail("--backend=nccl moves device buffers: it needs --device=cuda");
  if (chip.getNumOccurrences() && device != distopt::runner::Device::cuda)
    fail("--chip applies to --device=cuda only");
  std::string header = headerFile;
  if (header.empty()) {
    SmallString<256> path(outputFile);
    llvm::sys::path::replace_extension(path, ".h");
    header = path.str().str();
  }
  // Outputs replace only regular files, never the module (PartialFile.h).
  distopt::protectInput("the module", inputFile);
  for (auto [option, path] :
       {std::pair<const char *, StringRef>{"-o", outputFile},
        {"--header", header}})
    if (llvm::Error e = distopt::checkOutputTarget(option, path))
      fail(llvm::toString(std::move(e)));
  if (distopt::isSameFile(header, outputFile))
    fail("the header would overwrite the library '" + outputFile + "'");
  std::string error;
  if (!distopt::checkWritable(outputFile, error) ||
      !distopt::checkWritable(header, error))
    fail(error);
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();

  DialectRegistry registry;
  dist::registerAllDialects(registry);
  dist::registerAllTranslations(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler handler(sourceMgr, &context);
  std::string openError;
  auto buffer = openInputFile(inputFile, &openError);
  if (!buffer)
    fail("cannot read '" + inputFile + "': " + openError);
  sourceMgr.AddNewSourceBuffer(std::move(buffer), llvm::SMLoc());
  OwningOpRef<ModuleOp> module = dist::parseUserSource(sourceMgr, &context);
  if (!module)
    fail("cannot parse '" + inputFile + "' (see the diagnostics above)");
  // What placed programs were made from: nothing runs it.
  dist::erasePlacementSource(*module);

  // The step's record (dist-to-runtime writes it too, when it runs).
  if (!(*module)->hasAttr(train::TrainDialect::kStepAttrName)) {
    SmallVector<std::string> steps;
    module->walk([&](func::FuncOp func) {
      if (entryName.empty() ? train::TrainingStep::isTrainingStep(func) &&
                                  !train::TrainingStep::isEvalFunction(func)
                            : func.getSymName() == entryName)
        steps.push_back(func.getSymName().str());
    });
    if (steps.empty())
      fail(entryName.empty() ? "no function has train.role arguments"
                             : "no function '" + entryName + "'");
    if (steps.size() > 1)
      fail("several functions are training steps (" + llvm::join(steps, ", ") +
           "): pick one with --entry");
    if (failed(train::recordStepSignature(*module, steps.front())))
      fail("cannot record the step (see the diagnostics above)");
  }
  FailureOr<train::StepSignature> step = train::readStepSignature(*module);
  if (failed(step))
    fail("cannot read the step's record (see the diagnostics above)");
  if (step->isMPMD())
    fail("'" + inputFile +
         "' is a step of placed programs (one per pipeline stage or "
         "server), which dist-compile does not compile yet: run it with "
         "dist-run");
  if (!entryName.empty() && step->entry != entryName)
    fail("'" + inputFile + "' records the step '" + step->entry +
         "', not --entry '" + entryName + "'");

  PassManager pm(&context);
  if (device == distopt::runner::Device::cuda) {
    train::CUDAPipelineOptions options;
    options.chip = chip;
    options.backend = backend;
    train::buildCUDAPipeline(pm, options);
  } else {
    train::CPUPipelineOptions options;
    options.backend = backend;
    options.optLevel = optLevel;
    train::buildCPUPipeline(pm, options);
  }
  if (failed(pm.run(*module)))
    fail("cannot compile the step (see the diagnostics above)");
  if (!distopt::runner::buildLibrary(
          *module, optLevel, outputFile,
          distopt::runner::getRuntimeLibraries(argv[0], device), error))
    fail("cannot build '" + outputFile + "': " + error);
  writeFile(header, writeHeader(*step, backend));
  llvm::outs() << "wrote " << outputFile << " and " << header << "\n";
  return 0;
}
