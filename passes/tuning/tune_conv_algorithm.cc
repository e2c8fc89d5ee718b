// TuneConvAlgorithm: chooses by measurement how the eligible 3x3 stride-1 convolutions of the
// main function are computed: directly, or as Winograd F(2x2,3x3) or F(4x4,3x3) chains of graph
// ops (passes/conv_algorithm.h), whose kernels the eval passes (FuseOps, TuneKernels ...) treat
// like any other.
//
// Candidates: the `algorithms` applied to every eligible convolution (picked by the search
// arguments), and with per_conv=1 also a per-convolution assignment: each eligible convolution
// is cut out as a module of its own, expanded with the eval passes and measured with every
// algorithm, and the fastest algorithm of each forms one more end-to-end candidate (kept only
// when it differs from the uniform ones, so the result is never slower, as measured, than the
// best uniform choice). When the eval passes nest tuning passes (placement, kernels), each piece
// is measured in their screening forms instead (own kernels; everything a backend takes), so a
// convolution oneDNN computes faster directly stays direct. The decision recorded in the trace
// is the choice text, so replay applies it without measuring. Screening (when this pass is
// nested in another's eval passes, or with keep=k) measures the uniform choices.
#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>

#include "ir/error.h"
#include "ir/structural.h"
#include "passes/backend_placement.h"
#include "passes/conv_algorithm.h"
#include "passes/heuristic/rewrite_helpers.h"
#include "passes/pass_declaration.h"
#include "passes/tuning_pass.h"
#include "tuning/session/tuning_session.h"

namespace tandem::passes {

namespace {

const char* const kDefaultAlgorithms = "direct,winograd_2x2,winograd_4x4";

std::vector<std::string> ParseAlgorithms(const std::string& text) {
  std::vector<std::string> algorithms;
  size_t begin = 0;
  while (begin <= text.size()) {
    size_t end = text.find(',', begin);
    if (end == std::string::npos) end = text.size();
    std::string name = text.substr(begin, end - begin);
    name.erase(0, name.find_first_not_of(' '));
    name.erase(name.find_last_not_of(' ') + 1);
    if (name != "direct" && name != "winograd_2x2" && name != "winograd_4x4") {
      throw ir::Error(fmt::format(
          "TuneConvAlgorithm: unknown algorithm '{}' in algorithms=\"{}\" (known: direct, "
          "winograd_2x2, winograd_4x4)",
          name, text));
    }
    if (std::find(algorithms.begin(), algorithms.end(), name) == algorithms.end()) {
      algorithms.push_back(name);
    }
    begin = end + 1;
  }
  return algorithms;
}

struct TuneConvAlgorithmOptions : SearchOptions {
  std::string algorithms = kDefaultAlgorithms;
  bool per_conv = false;
};

class TuneConvAlgorithm : public TuningPass {
 public:
  TuneConvAlgorithm(PassInfo info, PassArguments arguments, std::vector<PassPtr> eval,
                    TuneConvAlgorithmOptions options)
      : TuningPass(std::move(info), std::move(arguments), std::move(eval), options),
        options_(std::move(options)) {}

  // The uniform choices: each algorithm applied to every eligible convolution.
  tuning::Knob MakeKnob(const ir::IRModule&, PassContext& context) const override {
    std::string function = context.Tuning().options().function;
    std::vector<tuning::Choice> choices;
    for (const std::string& algorithm : Algorithms()) {
      tuning::Choice choice{algorithm,
                            [function, algorithm](const ir::IRModule& m) {
                              return ApplyConvAlgorithm(m, function, algorithm);
                            },
                            nullptr};
      if (algorithm != "direct") {
        choice.constraint = [function](const ir::IRModule& m) {
          return m.Has(function) && m.Get(function).ExternBackend().empty() &&
                 !EligibleConvolutions(m.Get(function)).empty();
        };
      }
      choices.push_back(std::move(choice));
    }
    return tuning::Knob(name(), std::move(choices));
  }

  Candidate Tune(const Candidate& candidate, PassContext& context) const override {
    const std::string& function_name = context.Tuning().options().function;
    tuning::Knob knob = MakeKnob(candidate.output, context);
    std::vector<std::string> texts =
        Strategy().Select(knob.ApplicableChoices(candidate.output), context.Tuning().random());
    std::vector<std::string> labels = texts;
    if (options_.per_conv && knob.ApplicableChoices(candidate.output).size() > 1) {
      std::string mixed = PerConvolution(candidate.output.Get(function_name), context);
      if (std::find(texts.begin(), texts.end(), mixed) == texts.end()) {
        texts.push_back(mixed);
        labels.push_back("per_conv");
      }
    }
    std::vector<Choice> choices;
    for (size_t k = 0; k < texts.size(); ++k) {
      ir::Instruction instruction = ChoiceInstruction(texts[k], labels);
      std::string text = texts[k];
      choices.push_back(
          {text, std::move(instruction), [&function_name, text](const ir::IRModule& m) {
             return ApplyConvAlgorithm(m, function_name, text);
           }});
    }
    return TuneChoices(candidate, std::move(choices), context);
  }

  // The screening form: every applicable uniform algorithm (no per-convolution measurement),
  // each with the screening form of the eval passes, so that a layout in which Winograd
  // applies is ranked with it.
  std::vector<Candidate> Screen(const Candidate& candidate, PassContext& context) const override {
    tuning::Knob knob = MakeKnob(candidate.output, context);
    const std::string& function_name = context.Tuning().options().function;
    std::vector<std::string> texts = knob.ApplicableChoices(candidate.output);
    std::vector<Candidate> screened;
    for (const std::string& text : texts) {
      Candidate next = candidate;
      next.trace.Append(ChoiceInstruction(text, texts));
      next.result.reset();
      try {
        next.output = ApplyConvAlgorithm(candidate.output, function_name, text);
      } catch (const ir::Error&) {
        continue;
      }
      for (Candidate& s : ScreenWithEvalPasses(next, context)) screened.push_back(std::move(s));
    }
    if (screened.empty()) screened.push_back(candidate);
    return screened;
  }

  ir::IRModule ApplyDecision(const ir::IRModule& module, const ir::Instruction& instruction,
                             PassContext& context) const override {
    if (!instruction.decision || !std::holds_alternative<std::string>(*instruction.decision)) {
      throw ir::Error("TuneConvAlgorithm: the instruction has no algorithm choice as its decision");
    }
    return ApplyConvAlgorithm(module, context.Tuning().options().function,
                              std::get<std::string>(*instruction.decision));
  }

 private:
  // The instruction recording `decision` among the `considered` labels.
  ir::Instruction ChoiceInstruction(const std::string& decision,
                                    const std::vector<std::string>& considered) const {
    ir::Instruction instruction;
    instruction.kind = name();
    instruction.attrs.Set("pass", DecisionText());
    instruction.attrs.Set("considered", fmt::format("{}", fmt::join(considered, ",")));
    instruction.decision = ir::AttrValue(decision);
    return instruction;
  }

  std::vector<std::string> Algorithms() const { return ParseAlgorithms(options_.algorithms); }

  // Measures every eligible convolution alone with each algorithm (expanded with the eval
  // passes) and returns the choice text of the fastest algorithm per convolution.
  std::string PerConvolution(const ir::GraphFunction& function, PassContext& context) const {
    std::vector<std::string> algorithms = Algorithms();
    std::vector<std::string> convs = EligibleConvolutions(function);
    std::vector<Candidate> measured;
    std::vector<std::pair<std::string, std::string>> measured_as;  // (conv, algorithm)
    for (size_t c = 0; c < convs.size(); ++c) {
      ir::IRModule alone;
      try {
        ir::GraphFunction piece =
            ExtractSubgraph(function, {function.Find(convs[c])}, function.name);
        alone.Add(piece);
        // Every algorithm of one convolution is checked against the same reference.
        alone.attrs().Set(tuning::kReferenceKeyAttr,
                          fmt::format("{:016x}", ir::StructuralHash(piece)));
        context.Tuning().EnsureReference(alone);
      } catch (const ir::Error&) {
        continue;
      }
      for (size_t k = 0; k < algorithms.size(); ++k) {
        Candidate piece = Candidate::Start(alone);
        try {
          piece = Candidate::Start(ApplyConvAlgorithm(alone, function.name, algorithms[k]));
        } catch (const ir::Error& e) {
          piece.result = tuning::MeasureResult::Failure(e.what());
        }
        if (EvalNestsTuning() && !piece.result) {
          // Nested tuning passes (placement, kernels) are too costly per piece: each piece is
          // measured in their screening forms (own kernels, everything a backend takes).
          for (Candidate& screened : ScreenWithEvalPasses(piece, context)) {
            measured.push_back(std::move(screened));
            measured_as.emplace_back(convs[c], algorithms[k]);
          }
          continue;
        }
        int64_t left = static_cast<int64_t>((convs.size() - c) * algorithms.size() - k);
        int64_t total = static_cast<int64_t>(convs.size() * algorithms.size());
        measured.push_back(ExpandWithEvalPasses(std::move(piece), context, {left, total + 2}));
        measured_as.emplace_back(convs[c], algorithms[k]);
      }
    }
    EvaluateAndSelect(measured, context);
    std::map<std::string, std::pair<double, std::string>> fastest;  // conv -> (seconds, algo)
    for (size_t i = 0; i < measured.size(); ++i) {
      const auto& result = measured[i].result;
      if (!result || !result->ok()) continue;
      auto [it, inserted] = fastest.try_emplace(measured_as[i].first,
                                                std::numeric_limits<double>::infinity(), "direct");
      if (result->median_seconds < it->second.first) {
        it->second = {result->median_seconds, measured_as[i].second};
      }
    }
    std::map<std::string, int64_t> tiles;
    for (const auto& [conv, best] : fastest) {
      if (best.second == "winograd_2x2") tiles[conv] = 2;
      if (best.second == "winograd_4x4") tiles[conv] = 4;
    }
    // A uniform assignment is written in its short form, so that it is recognized as one.
    if (!tiles.empty() && tiles.size() == convs.size()) {
      bool same = std::all_of(tiles.begin(), tiles.end(),
                              [&](const auto& t) { return t.second == tiles.begin()->second; });
      if (same) return tiles.begin()->second == 2 ? "winograd_2x2" : "winograd_4x4";
    }
    return ConvAlgorithmText(tiles);
  }

  TuneConvAlgorithmOptions options_;
};

}  // namespace

void RegisterTuneConvAlgorithm(PassRegistry& registry) {
  using Options = TuneConvAlgorithmOptions;
  std::vector<PassOption<Options>> arguments = SearchArguments<Options>();
  arguments.push_back({"algorithms", &Options::algorithms,
                       "comma-separated algorithms applied to every eligible convolution: "
                       "direct, winograd_2x2, winograd_4x4"});
  arguments.push_back({"per_conv", &Options::per_conv,
                       "1: also measure each convolution alone with every algorithm and try "
                       "the fastest per convolution as one more candidate"});
  RegisterTuningPass<TuneConvAlgorithm>(
      registry,
      PassDeclaration<Options>{
          .name = "TuneConvAlgorithm",
          .summary = "Choose by measurement between direct and Winograd F(2x2,3x3) / F(4x4,3x3) "
                     "convolution for the 3x3 stride-1 conv2d calls (uniformly or per "
                     "convolution).",
          .required = {"InferType"},
          .arguments = std::move(arguments),
          // Unknown algorithms fail when the pipeline is made.
          .check = [](const Options& options) { ParseAlgorithms(options.algorithms); }});
}

}  // namespace tandem::passes
