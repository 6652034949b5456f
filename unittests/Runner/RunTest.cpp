//===- RunTest.cpp - the runner library in a test's process ---------------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The runner as a library: options by name, their checks together, and a
// run of examples/mlp.mlir in this process on in-memory arrays: the events
// an observer sees, a stop it requests, and errors that come back instead
// of ending the process.
//
//===----------------------------------------------------------------------===//

#include "distopt/Runner/Run.h"
#include "distopt/Runner/RunOptions.h"

#include "gtest/gtest.h"

#include <string>
#include <vector>

using namespace distopt::runner;

namespace {

std::string messageOf(llvm::Error error) {
  return takeErrorMessage(std::move(error));
}

TEST(RunOptions, SetsFieldsByDistRunsNames) {
  RunConfig config;
  ASSERT_FALSE(setRunOption(config, "steps", "7"));
  ASSERT_FALSE(setRunOption(config, "checkpoint-dir", "/tmp/ckpt"));
  ASSERT_FALSE(setRunOption(config, "resume", "true"));
  ASSERT_FALSE(setRunOption(config, "shuffle", "false"));
  ASSERT_FALSE(setRunOption(config, "on-nonfinite", "continue"));
  ASSERT_FALSE(setRunOption(config, "opt-level", "1"));
  EXPECT_EQ(config.steps, 7u);
  EXPECT_EQ(config.checkpointDir, "/tmp/ckpt");
  EXPECT_TRUE(config.resume);
  EXPECT_EQ(config.shuffle, false);
  EXPECT_EQ(config.onNonFinite, OnNonFinite::carryOn);
  EXPECT_EQ(config.optLevel, 1u);
}

TEST(RunOptions, NamesTheOptionAndTheValueOnAMistake) {
  RunConfig config;
  EXPECT_EQ(messageOf(setRunOption(config, "steps", "two")),
            "--steps takes a count (an integer >= 0), not 'two'");
  std::string unknown = messageOf(setRunOption(config, "stepz", "1"));
  EXPECT_NE(unknown.find("unknown run option 'stepz'"), std::string::npos)
      << unknown;
  EXPECT_NE(unknown.find("checkpoint-dir"), std::string::npos) << unknown;
  EXPECT_FALSE(config.steps);
}

TEST(RunOptions, ChecksOptionsTogether) {
  RunConfig config;
  config.modulePath = "step.mlir";
  config.datasetPath = "data";
  config.steps = 3;
  config.epochs = 2;
  EXPECT_EQ(messageOf(checkRunConfig(config)),
            "give --steps or --epochs, not both");
  config.steps.reset();
  config.datasetPath.clear();
  config.epochs.reset();
  config.controlPath = "control";
  EXPECT_EQ(messageOf(checkRunConfig(config)),
            "--control decides after each epoch of a --dataset, and none is "
            "given");
}

/// Records the events; asks to stop after `stopAfter` steps (0: never).
class Recorder : public RunObserver {
public:
  explicit Recorder(uint64_t stopAfter = 0) : stopAfter(stopAfter) {}
  void onEvent(const llvm::json::Object &event) override {
    names.push_back(event.getString("event")->str());
    if (names.back() == "step")
      losses.push_back(*event.getNumber("loss"));
  }
  bool stopRequested() override {
    return stopAfter && losses.size() >= stopAfter;
  }
  std::vector<std::string> names;
  std::vector<double> losses;
  uint64_t stopAfter;
};

/// examples/mlp.mlir with a random state and batch, in memory.
RunConfig getMlpConfig() {
  RunConfig config;
  config.modulePath = DISTOPT_SOURCE_DIR "/examples/mlp.mlir";
  config.toolPath = DISTOPT_DIST_RUN;
  config.print = false;
  config.useCache = false;
  config.optLevel = 1;
  config.seed = 5;
  llvm::Expected<std::pair<Arrays, Arrays>> init =
      initStateAndData(config, /*withData=*/true);
  EXPECT_TRUE(bool(init)) << (init ? "" : messageOf(init.takeError()));
  if (init) {
    config.state = init->first;
    config.statePath = "<state>";
    config.data = init->second;
    config.dataPath = "<data>";
  }
  return config;
}

TEST(Run, TrainsInThisProcessAndReportsEachStep) {
  RunConfig config = getMlpConfig();
  config.steps = 3;
  Recorder recorder;
  llvm::Expected<RunResult> result = run(config, &recorder);
  ASSERT_TRUE(bool(result)) << messageOf(result.takeError());
  EXPECT_EQ(recorder.names,
            (std::vector<std::string>{"start", "step", "step", "step", "end"}));
  ASSERT_EQ(result->losses.size(), 3u);
  for (size_t i = 0; i < 3; ++i)
    EXPECT_FLOAT_EQ(result->losses[i], float(recorder.losses[i]));
  // The same batch three times: SGD makes its loss go down.
  EXPECT_LT(result->losses[2], result->losses[0]);
  EXPECT_EQ(result->stepsDone, 3u);
  EXPECT_FALSE(result->stoppedEarly);
  // The trained state comes back whole, without the hyperparameters.
  ASSERT_TRUE(result->state.count("fc1.weight"));
  EXPECT_EQ(result->state["fc1.weight"].shape,
            config.state->at("fc1.weight").shape);
  EXPECT_NE(result->state["fc1.weight"].bytes,
            config.state->at("fc1.weight").bytes);

  // Two steps and then one more from the returned state: the same bits.
  RunConfig first = config;
  first.steps = 2;
  llvm::Expected<RunResult> two = run(first, nullptr);
  ASSERT_TRUE(bool(two)) << messageOf(two.takeError());
  RunConfig second = config;
  second.steps = 1;
  for (auto &[name, array] : two->state)
    (*second.state)[name] = array;
  llvm::Expected<RunResult> one = run(second, nullptr);
  ASSERT_TRUE(bool(one)) << messageOf(one.takeError());
  EXPECT_EQ(one->losses[0], result->losses[2]);
  for (const auto &[name, array] : result->state)
    EXPECT_EQ(one->state.at(name).bytes, array.bytes) << name;
}

TEST(Run, StopsWhenTheObserverAsks) {
  RunConfig config = getMlpConfig();
  config.steps = 5;
  Recorder recorder(/*stopAfter=*/2);
  llvm::Expected<RunResult> result = run(config, &recorder);
  ASSERT_TRUE(bool(result)) << messageOf(result.takeError());
  EXPECT_EQ(result->stepsDone, 2u);
  EXPECT_TRUE(result->stoppedEarly);
  EXPECT_EQ(result->losses.size(), 2u);
  EXPECT_EQ(recorder.names.back(), "end");
}

TEST(Run, ReturnsErrorsInsteadOfEndingTheProcess) {
  RunConfig config = getMlpConfig();
  config.steps = 1;
  config.state->erase("fc2.bias");
  llvm::Expected<RunResult> missing = run(config, nullptr);
  ASSERT_FALSE(bool(missing));
  EXPECT_EQ(messageOf(missing.takeError()),
            "'fc2.bias' is missing from --state '<state>'");

  config = getMlpConfig();
  config.moduleText = "func.func @broken(";
  config.modulePath = "<broken>";
  llvm::Expected<RunResult> broken = run(config, nullptr);
  ASSERT_FALSE(bool(broken));
  std::string message = messageOf(broken.takeError());
  EXPECT_EQ(message.rfind("cannot parse '<broken>':\n<broken>:1:", 0), 0u)
      << message;

  // And the process can still train.
  config = getMlpConfig();
  config.steps = 1;
  EXPECT_TRUE(bool(run(config, nullptr)));
}

} // namespace
