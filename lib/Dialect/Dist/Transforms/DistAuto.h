//===- DistAuto.h - dist-auto's plans and analytic model --------*- C++ -*-===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef DISTOPT_LIB_DIALECT_DIST_TRANSFORMS_DISTAUTO_H
#define DISTOPT_LIB_DIALECT_DIST_TRANSFORMS_DISTAUTO_H

#include "distopt/Analysis/Cluster.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <map>
#include <memory>

namespace mlir::dist::autoplan {

/// One point of the search space and what it is predicted to cost.
struct Plan {
  int64_t dp = 1, tp = 1, pp = 1, zero = 0, microbatches = 1;
  bool sequenceParallel = false;
  /// The pipeline schedule ("" without a pipeline).
  std::string schedule;
  /// Recomputation: none, selective, full (train-remat's policies) or
  /// layer (full, each layer's input kept).
  std::string remat = "none";

  /// False with `reason` when the strategy refused the step.
  bool built = false;
  std::string reason;
  double stepSeconds = 0, computeSeconds = 0, commSeconds = 0, bubble = 0;
  int64_t memoryBytes = 0;
  double commBytes = 0;
  bool fits = false;
  /// The analytic mode's lower bound on the step time, and why the plan
  /// was left at its bounds ("" when it was not).
  double lowerBound = 0;
  std::string pruned;

  /// train-remat's pass with its options ("" without recomputation).
  std::string getRematStrategy() const {
    if (remat == "none")
      return "";
    if (remat == "layer")
      return "train-remat{policy=full checkpoints=layer}";
    return "train-remat{policy=" + remat + "}";
  }

  /// The hand strategy as a pass pipeline on a module ("" for one device
  /// without recomputation).
  std::string getStrategy() const {
    std::string text = getRematStrategy();
    if (dp * tp * pp == 1)
      return text;
    if (!text.empty())
      text += ",";
    if (sequenceParallel)
      return text + llvm::formatv("dist-tensor-parallel{{size={0} "
                                  "sequence-parallel=true}",
                                  tp)
                        .str();
    text += llvm::formatv("dist-hybrid{{dp={0} tp={1} pp={2} zero={3}", dp, tp,
                          pp, zero)
                .str();
    if (pp > 1)
      text += llvm::formatv(" microbatches={0} schedule={1}", microbatches,
                            schedule);
    return text + "}";
  }

  std::string describe() const {
    std::string text =
        llvm::formatv("dp={0} tp={1} pp={2} zero={3}", dp, tp, pp, zero);
    if (sequenceParallel)
      text += " sp";
    if (pp > 1)
      text += llvm::formatv(" mb={0} {1}", microbatches, schedule);
    if (remat != "none")
      text += " remat=" + remat;
    return text;
  }

  llvm::json::Value toJSON() const {
    llvm::json::Object object{
        {"dp", dp},
        {"tp", tp},
        {"pp", pp},
        {"zero", zero},
        {"sequence_parallel", sequenceParallel},
        {"microbatches", microbatches},
        {"schedule", schedule.empty() ? "none" : schedule},
        {"remat", remat},
        {"strategy", getStrategy()}};
    if (lowerBound > 0)
      object["lower_bound_step_time_s"] = lowerBound;
    if (!pruned.empty()) {
      object["pruned"] = pruned;
      object["memory_bytes_per_device_at_least"] = memoryBytes;
      return object;
    }
    if (!built) {
      object["refused"] = reason;
      return object;
    }
    object["step_time_s"] = stepSeconds;
    object["compute_time_s"] = computeSeconds;
    object["comm_time_s"] = commSeconds;
    object["memory_bytes_per_device"] = memoryBytes;
    object["bubble_fraction"] = bubble;
    object["comm_bytes_per_device"] = commBytes;
    object["fits_memory"] = fits;
    return object;
  }
};

/// The seconds compute op `op` takes on a device of `cluster`: its FLOPs
/// over the peak of its result's element type (f32, bf16, f16) or its
/// bytes over the memory bandwidth, whichever is longer (0 for ops without
/// a cost). A 16-bit type the device gives no peak for takes the f32 peak
/// and is added to `missingPeaks`.
double getRooflineSeconds(const ClusterSpec &cluster, Operation *op,
                          llvm::StringSet<> &missingPeaks);

/// Predicts plans without building them, from the single-device step
/// annotated once per tensor-parallel degree and recomputation policy (see
/// DistAutoAnalytic.cpp).
class AnalyticModel {
public:
  /// `batch`: the step's batch size, when it has one.
  AnalyticModel(ModuleOp module, const ClusterSpec &cluster,
                std::optional<int64_t> batch, llvm::StringSet<> &missingPeaks);
  ~AnalyticModel();
  /// Fills `plan`'s prediction (built = true), or its reason. With
  /// `prune`, a plan is left at its lower bounds (`pruned` says why) when
  /// is a pipeline over memory with 1F1B's warm-up microbatches in flight
  /// (stage s: min(pp - s, microbatches)), or when its
  /// lower bound on the step time is over `cutoff`: its schedule is not
  /// simulated.
  void predict(Plan &plan, bool prune = false,
               std::optional<double> cutoff = std::nullopt);

private:
  struct Core;
  struct StageSums;
  struct Cut;
  struct Simulated;
  Cut &getCut(Core &core, int64_t pp);
  /// The step annotated for `tp` and `remat` (its reason set when the
  /// annotation failed).
  Core &getCore(int64_t tp, StringRef remat);
  ModuleOp module;
  const ClusterSpec &cluster;
  std::optional<int64_t> batch;
  llvm::StringSet<> &missingPeaks;
  std::map<std::pair<int64_t, std::string>, std::unique_ptr<Core>> cores;
  /// The step with each recomputation policy applied (null: it failed,
  /// with the error in `rematErrors`).
  std::map<std::string, OwningOpRef<ModuleOp>> rematSteps;
  std::map<std::string, std::string> rematErrors;
};

} // namespace mlir::dist::autoplan

#endif // DISTOPT_LIB_DIALECT_DIST_TRANSFORMS_DISTAUTO_H
