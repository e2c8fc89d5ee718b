// TuneBackendPlacement: chooses which subgraphs run on external backends (oneDNN, cuBLAS) and
// which on our own code generator, by measurement, in the way Collage does.
//
// Candidate pieces come from every backend's patterns (only matches the backend really
// compiles) and, for our own code generator, from the same chains: every prefix and every
// suffix of the longest chain at each anchor. Each piece is cut out of the graph
// as a module of its own, expanded with this pass's eval passes (so TuneKernels tunes our side of
// the comparison; a piece placed on a backend keeps its library kernel) and measured through the
// shared builder and runner; results are cached in the database like every graph candidate, so a
// second run measures nothing, and a piece alike an earlier one up to its weights (a repeated
// block of the model) takes that one's time without a measurement of its own. A dynamic program
// over the nodes in dataflow order then covers every node that some piece contains exactly once at
// the least summed latency; its state is the position and the set of later nodes already covered by
// a chosen piece, which stays small because pieces are short chains. Pieces measured alone miss
// what happens between them (a reorder into a backend's layout, a fusion that a cut prevents), so
// the dynamic program's placement is measured end to end together with placing nothing and placing
// everything each backend takes, and the fastest of those is kept: the result is never slower, as
// measured, than all-own or all-backend. Under a budget too small for every piece, the anchors are
// measured in dataflow order, each both ways, in rounds; a kind of piece whose one side lost by far
// at its first anchors is not measured on that side again (hopeless_sides.h), and two programs
// guess the rest: one with the backend wherever a chain went unmeasured, one with our kernels
// (DynamicProgram).
//
// When the eval passes nest tuning passes (eval=[FuseOps, TuneKernels]), tuning the kernels of
// every piece would spread the budget over dozens of pieces: the pieces are measured in the
// screening form of the eval passes (default schedules) and only the whole-module choices are
// expanded with the full eval passes; with keep=k those are screened too and the k best tuned
// (tuning_pass.h). The pieces then leave the kernels a share of the budget as large as our
// kernels' share of the time of the cover measured so far (at most half): a placement that runs
// mostly on a library leaves our kernels little to gain. As a nested pass's screening form, the
// pass offers nothing placed and everything each backend takes.
//
// The decision recorded in the trace is the placement itself (passes/backend_placement.h text),
// so replay re-creates the same call_extern nodes without measuring.
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <set>

#include "ir/error.h"
#include "ir/structural.h"
#include "passes/backend_placement.h"
#include "passes/heuristic/rewrite_helpers.h"
#include "passes/pass_declaration.h"
#include "passes/tuning/cover_program.h"
#include "passes/tuning/hopeless_sides.h"
#include "passes/tuning_pass.h"
#include "tuning/session/tuning_session.h"

namespace tandem::passes {

namespace {

// A side of a kind of piece that lost by more than this factor at its first anchors is not
// measured at the later ones (HopelessSides).
constexpr double kHopelessFactor = 1.5;

struct TuneBackendPlacementOptions {
  std::string backends;
  bool measure_pieces = true;
  int64_t keep = 0;
};

class TuneBackendPlacement : public TuningPass {
 public:
  using KeepMeasuring = std::function<bool(int64_t spent, const std::vector<bool>& skipped)>;

  TuneBackendPlacement(PassInfo info, PassArguments arguments, std::vector<PassPtr> eval,
                       TuneBackendPlacementOptions options)
      : TuningPass(std::move(info), std::move(arguments), std::move(eval),
                   SearchOptions{.keep = options.keep}),
        options_(std::move(options)) {}

  Candidate Tune(const Candidate& candidate, PassContext& context) const override {
    return TuneChoices(candidate, Choices(candidate, context, /*dynamic_program=*/true), context);
  }

  // Screening form (tuning_pass.h): nothing placed and everything each backend takes, each with
  // the screening form of the eval passes.
  std::vector<Candidate> Screen(const Candidate& candidate, PassContext& context) const override {
    std::vector<Candidate> screened;
    for (Choice& choice : Choices(candidate, context, /*dynamic_program=*/false)) {
      Candidate next = candidate;
      next.trace.Append(std::move(choice.instruction));
      next.result.reset();
      try {
        next.output = choice.apply(candidate.output);
      } catch (const ir::Error&) {
        continue;  // a placement that does not apply has no screening form
      }
      for (Candidate& s : ScreenWithEvalPasses(next, context)) screened.push_back(std::move(s));
    }
    if (screened.empty()) screened.push_back(candidate);
    return screened;
  }

  ir::IRModule ApplyDecision(const ir::IRModule& module, const ir::Instruction& instruction,
                             PassContext& context) const override {
    if (!instruction.decision || !std::holds_alternative<std::string>(*instruction.decision)) {
      throw ir::Error("TuneBackendPlacement: the instruction has no placement as its decision");
    }
    return ApplyPlacements(module, context.Tuning().options().function,
                           ParsePlacementText(std::get<std::string>(*instruction.decision)));
  }

 private:
  // The whole-module choices: nothing placed, everything each backend takes, and (with
  // `dynamic_program`, when pieces are measured) the dynamic program's choice; distinct ones.
  std::vector<Choice> Choices(const Candidate& candidate, PassContext& context,
                              bool dynamic_program) const {
    const std::string& function_name = context.Tuning().options().function;
    const ir::GraphFunction& function = candidate.output.Get(function_name);
    PlacementMatcher matcher(SelectBackends(options_.backends));
    std::vector<backends::PatternMatch> matches = matcher.Matches(function);

    std::vector<std::pair<std::string, std::vector<Placement>>> options = {{"none", {}}};
    for (const std::string& backend : BackendsOf(matches)) {
      options.push_back(
          {"all-" + backend, GreedyPlacements(function, OfBackend(matches, backend))});
    }
    if (dynamic_program && !matches.empty() && options_.measure_pieces) {
      for (auto& option : DynamicProgram(function, matches, context)) {
        options.push_back(std::move(option));
      }
    }

    // Distinct placements only (the program's choice often equals one of the others).
    std::vector<std::pair<std::string, std::vector<Placement>>> distinct;
    std::vector<std::string> texts, considered;
    for (const auto& [label, placements] : options) {
      std::string text = PlacementText(placements);
      if (std::find(texts.begin(), texts.end(), text) != texts.end()) continue;
      texts.push_back(text);
      considered.push_back(label);
      distinct.emplace_back(label, placements);
    }
    std::vector<Choice> choices;
    for (size_t k = 0; k < distinct.size(); ++k) {
      const auto& label = distinct[k].first;
      const auto& placements = distinct[k].second;
      ir::Instruction instruction;
      instruction.kind = name();
      instruction.attrs.Set("pass", DecisionText());
      instruction.attrs.Set("choice", label);
      instruction.attrs.Set("considered", fmt::format("{}", fmt::join(considered, ",")));
      instruction.decision = ir::AttrValue(texts[k]);
      choices.push_back(
          {label, std::move(instruction), [function_name, placements](const ir::IRModule& m) {
             return ApplyPlacements(m, function_name, placements);
           }});
    }
    return choices;
  }

  // The dynamic program's placements: "dynamic-program" over the measured pieces and, when the
  // budget ran out before every piece was measured, "dynamic-program-own". A small budget (a
  // model has hundreds of pieces, a run may have a hundred trials) measures the anchors' longest
  // chains in dataflow order, backend and ours at each, and stops part-way; the first program
  // then places every later anchor on the backend, the second on our kernels (an unmeasured
  // longest chain costs nothing in it), and both decide by measurement where pieces were
  // measured. Both are measured end to end with the other whole-module placements.
  std::vector<std::pair<std::string, std::vector<Placement>>> DynamicProgram(
      const ir::GraphFunction& function, const std::vector<backends::PatternMatch>& matches,
      PassContext& context) const {
    std::vector<Piece> pieces = MakePieces(matches);
    // Each piece as a module of its own, expanded with the eval passes, measured together.
    std::vector<Candidate> measured;
    std::vector<size_t> piece_of;
    // A piece of the same shapes, operators and backend as an earlier one (a repeated block of
    // the model, with other weights) takes that one's time instead of a measurement of its own.
    std::map<std::string, size_t> first_of_kind;
    std::vector<int64_t> same_as(pieces.size(), -1);
    for (size_t p = 0; p < pieces.size(); ++p) {
      ir::IRModule alone;
      try {
        ir::GraphFunction subgraph = ExtractSubgraph(function, pieces[p].nodes, function.name);
        std::string kind = fmt::format("{:016x}/{}/{}", WeightFreeHash(subgraph), pieces[p].backend,
                                       pieces[p].pattern);
        auto [first, inserted] = first_of_kind.emplace(kind, p);
        if (!inserted) {
          same_as[p] = static_cast<int64_t>(first->second);
          continue;
        }
        alone.Add(subgraph);
        // Own and placed versions of one node set are checked against the same reference.
        alone.attrs().Set(tuning::kReferenceKeyAttr,
                          fmt::format("{:016x}", ir::StructuralHash(subgraph)));
        context.Tuning().EnsureReference(alone);
        if (!pieces[p].backend.empty()) {
          Placement placement{pieces[p].backend, pieces[p].pattern, {}};
          for (ir::ValueId id : pieces[p].nodes) placement.nodes.push_back(function.node(id).name);
          alone = ApplyPlacements(alone, function.name, {placement});
        }
      } catch (const ir::Error&) {
        continue;
      }
      Candidate piece = Candidate::Start(alone);
      if (EvalNestsTuning()) {
        // Tuning every piece's kernels would spread the budget over dozens of pieces: pieces
        // are compared in the screening form of the eval passes (default schedules), and the
        // whole-module choices are tuned afterwards.
        for (Candidate& screened : ScreenWithEvalPasses(piece, context)) {
          measured.push_back(std::move(screened));
          piece_of.push_back(p);
        }
        continue;
      }
      // The pieces are measured together at the end, then up to 2 + backends placements.
      int64_t total = static_cast<int64_t>(pieces.size());
      measured.push_back(ExpandWithEvalPasses(std::move(piece), context,
                                              {total - static_cast<int64_t>(p), total + 3}));
      piece_of.push_back(p);
    }
    // The end-to-end measurements of the placements (none, all-<backend>, the two programs')
    // are left for after the pieces. When kernels are tuned after them, the pieces stop at half
    // of the rest, or later when the cover measured so far runs mostly on a backend: tuning our
    // kernels could then gain little, and the kept placement's own kernels are reserved a share
    // of the budget equal to their share of its time (a model has hundreds of pieces: without a
    // reserve they would take it all, leaving the kernels untuned and the tuned form unmeasured).
    tuning::TuningSession& session = context.Tuning();
    int64_t remaining = session.RemainingBudget();
    bool limited = remaining != std::numeric_limits<int64_t>::max();
    int64_t for_pieces = std::max<int64_t>(0, remaining - 4);
    auto keep_measuring = [&](int64_t spent, const std::vector<bool>& skipped) {
      if (!limited || !EvalNestsTuning() || 2 * spent < for_pieces) return true;
      PieceTimes now = Times(pieces, measured, piece_of, same_as, skipped);
      double own_share = std::min(0.5, OwnShareOfCover(now.pieces, now.unmeasured));
      return static_cast<double>(spent) < static_cast<double>(for_pieces) * (1.0 - own_share);
    };
    std::vector<bool> skipped;
    {
      tuning::BudgetShareScope scope(session, for_pieces, limited);
      skipped = MeasureInRounds(function, pieces, measured, piece_of, keep_measuring, context);
    }

    PieceTimes times = Times(pieces, measured, piece_of, same_as, skipped);
    if (std::none_of(times.unmeasured.begin(), times.unmeasured.end(), [](bool u) { return u; })) {
      return {{"dynamic-program", Cover(function, times.pieces)}};
    }
    // Where a longest chain went unmeasured, one program takes the backend's (the library is
    // the safer guess) and the other ours, each at no cost; measured pieces decide the rest.
    return {
        {"dynamic-program", Cover(function, WithGuesses(times.pieces, times.unmeasured, false))},
        {"dynamic-program-own",
         Cover(function, WithGuesses(times.pieces, times.unmeasured, true))}};
  }

  struct PieceTimes {
    std::vector<Piece> pieces;     // with their measured seconds
    std::vector<bool> unmeasured;  // has a candidate that the budget did not reach, not skipped
  };
  // Each piece's time, the best of its measured candidates, or the time of the earlier piece of
  // its kind (`same_as`); a piece without a candidate (its subgraph did not extract) is neither
  // measured nor guessed.
  static PieceTimes Times(std::vector<Piece> pieces, const std::vector<Candidate>& measured,
                          const std::vector<size_t>& piece_of, const std::vector<int64_t>& same_as,
                          std::vector<bool> skipped) {
    std::vector<bool> unmeasured(pieces.size(), true);
    std::vector<bool> tried(pieces.size(), false);
    for (size_t k = 0; k < measured.size(); ++k) {
      const auto& result = measured[k].result;
      size_t p = piece_of[k];
      tried[p] = true;
      if (!result || tuning::TuningSession::IsOverBudget(*result)) continue;
      unmeasured[p] = false;
      if (result->ok()) pieces[p].seconds = std::min(pieces[p].seconds, result->median_seconds);
    }
    for (size_t p = 0; p < pieces.size(); ++p) {
      if (same_as[p] < 0) continue;
      auto first = static_cast<size_t>(same_as[p]);
      pieces[p].seconds = pieces[first].seconds;
      tried[p] = tried[first];
      unmeasured[p] = unmeasured[first];
      skipped[p] = skipped[first];
    }
    for (size_t p = 0; p < pieces.size(); ++p) {
      unmeasured[p] = unmeasured[p] && tried[p] && !skipped[p];
    }
    return {std::move(pieces), std::move(unmeasured)};
  }

  // Measures the pieces' candidates in order, kRoundSize at a time, while `keep_measuring`
  // (given the measurements spent so far and the pieces skipped) allows; what is left is refused
  // as over budget. After each round, a kind of piece whose one side lost by far at every anchor
  // of that kind measured both ways (at least two) is not measured on that side again
  // (hopeless_sides.h), when the budget cannot measure every piece; returns which pieces were so
  // skipped.
  std::vector<bool> MeasureInRounds(const ir::GraphFunction& function,
                                    const std::vector<Piece>& pieces,
                                    std::vector<Candidate>& measured,
                                    const std::vector<size_t>& piece_of,
                                    const KeepMeasuring& keep_measuring,
                                    PassContext& context) const {
    constexpr size_t kRoundSize = 8;
    std::vector<bool> skipped(pieces.size(), false);
    tuning::TuningSession& session = context.Tuning();
    int64_t budget_at_start = session.RemainingBudget();
    bool may_skip = budget_at_start < static_cast<int64_t>(measured.size());
    // The kind of each anchor's longest chain (ours: every backend chain is one of its
    // prefixes); the pieces compared are each side's chain of that length.
    LongestLengths longest = LongestAtEachAnchor(pieces);
    std::map<ir::ValueId, std::string> kind_of;
    for (const Piece& piece : pieces) {
      if (piece.backend.empty() && IsLongest(piece, longest)) {
        kind_of[piece.nodes.front()] = PieceKind(function, piece.nodes);
      }
    }
    auto is_compared = [&](const Piece& piece) {
      auto own = longest.find({piece.nodes.front(), ""});
      return IsLongest(piece, longest) && own != longest.end() && piece.nodes.size() == own->second;
    };
    HopelessSides hopeless(kHopelessFactor, /*anchors=*/2);
    std::map<ir::ValueId, std::pair<double, double>> both_ways;  // own, best backend
    size_t next = 0;
    while (next < measured.size() && !session.BudgetSpent() &&
           keep_measuring(budget_at_start - session.RemainingBudget(), skipped)) {
      std::vector<size_t> round;
      for (; next < measured.size() && round.size() < kRoundSize; ++next) {
        const Piece& piece = pieces[piece_of[next]];
        auto kind = kind_of.find(piece.nodes.front());
        if (may_skip && kind != kind_of.end() &&
            hopeless.IsHopeless(kind->second, piece.backend.empty())) {
          skipped[piece_of[next]] = true;
          continue;
        }
        round.push_back(next);
      }
      std::vector<Candidate> batch;
      for (size_t k : round) batch.push_back(std::move(measured[k]));
      EvaluateAndSelect(batch, context);
      for (size_t i = 0; i < round.size(); ++i) {
        size_t k = round[i];
        measured[k] = std::move(batch[i]);
        const Piece& piece = pieces[piece_of[k]];
        const auto& result = measured[k].result;
        if (!is_compared(piece) || !result || !result->ok()) continue;
        auto [entry, inserted] = both_ways.try_emplace(piece.nodes.front(), 0.0, 0.0);
        double& side = piece.backend.empty() ? entry->second.first : entry->second.second;
        bool was_compared = entry->second.first > 0 && entry->second.second > 0;
        side = side > 0 ? std::min(side, result->median_seconds) : result->median_seconds;
        if (!was_compared && entry->second.first > 0 && entry->second.second > 0) {
          hopeless.Add(kind_of.at(piece.nodes.front()), entry->second.first, entry->second.second);
        }
      }
    }
    // What the budget did not reach is refused (answered from the database where it can be),
    // for the caller to count as unmeasured.
    if (next < measured.size()) {
      std::vector<Candidate> rest;
      for (size_t k = next; k < measured.size(); ++k) rest.push_back(std::move(measured[k]));
      {
        tuning::BudgetShareScope nothing_more(session, 0);
        EvaluateAndSelect(rest, context);
      }
      for (size_t k = next; k < measured.size(); ++k) measured[k] = std::move(rest[k - next]);
    }
    return skipped;
  }

  static std::vector<backends::PatternMatch> OfBackend(
      const std::vector<backends::PatternMatch>& matches, const std::string& backend) {
    std::vector<backends::PatternMatch> selected;
    for (const backends::PatternMatch& match : matches) {
      if (match.backend == backend) selected.push_back(match);
    }
    return selected;
  }

  static std::set<std::string> BackendsOf(const std::vector<backends::PatternMatch>& matches) {
    std::set<std::string> names;
    for (const backends::PatternMatch& match : matches) names.insert(match.backend);
    return names;
  }

  // The backend placements of the dynamic program's cover of `pieces`.
  static std::vector<Placement> Cover(const ir::GraphFunction& function,
                                      const std::vector<Piece>& pieces) {
    std::vector<Placement> placements;
    for (size_t p : CoverProgram(pieces).Solve()) {
      if (pieces[p].backend.empty()) continue;
      Placement placement{pieces[p].backend, pieces[p].pattern, {}};
      for (ir::ValueId id : pieces[p].nodes) placement.nodes.push_back(function.node(id).name);
      placements.push_back(std::move(placement));
    }
    std::sort(placements.begin(), placements.end(), [&](const Placement& a, const Placement& b) {
      return function.Find(a.nodes.back()) < function.Find(b.nodes.back());
    });
    return placements;
  }

  // Backend pieces are the matches; own pieces are the prefixes and suffixes of the longest
  // chain at each anchor (with the backend's prefixes they cover every split of a chain).
  static std::vector<Piece> MakePieces(const std::vector<backends::PatternMatch>& matches) {
    std::vector<Piece> pieces;
    std::map<ir::ValueId, std::vector<ir::ValueId>> chains;
    for (const backends::PatternMatch& match : matches) {
      pieces.push_back(Piece{match.nodes, match.backend, match.pattern});
      std::vector<ir::ValueId>& chain = chains[match.nodes.front()];
      if (match.nodes.size() > chain.size()) chain = match.nodes;
    }
    std::set<std::vector<ir::ValueId>> own;
    for (const auto& [anchor, chain] : chains) {
      for (size_t k = 1; k <= chain.size(); ++k) {
        own.insert(std::vector<ir::ValueId>(chain.begin(),
                                            chain.begin() + static_cast<std::ptrdiff_t>(k)));
        own.insert(std::vector<ir::ValueId>(chain.begin() + static_cast<std::ptrdiff_t>(k - 1),
                                            chain.end()));
      }
    }
    for (const std::vector<ir::ValueId>& nodes : own) pieces.push_back(Piece{nodes, "", ""});
    // Measured in this order, so under a budget too small for every piece, each anchor's longest
    // chains, each backend's and then ours, come first, anchor by anchor in dataflow order: every
    // anchor measured is then a real comparison of the backend with our kernels before shorter
    // splits are measured (all backend chains first would leave ours unmeasured everywhere).
    LongestLengths longest = LongestAtEachAnchor(pieces);
    auto is_longest = [&](const Piece& piece) { return IsLongest(piece, longest); };
    std::stable_sort(pieces.begin(), pieces.end(), [&](const Piece& a, const Piece& b) {
      if (is_longest(a) != is_longest(b)) return is_longest(a);
      if (!is_longest(a)) return false;
      if (a.nodes.front() != b.nodes.front()) return a.nodes.front() < b.nodes.front();
      return !a.backend.empty() && b.backend.empty();
    });
    return pieces;
  }

  TuneBackendPlacementOptions options_;
};

}  // namespace

void RegisterTuneBackendPlacement(PassRegistry& registry) {
  using Options = TuneBackendPlacementOptions;
  RegisterTuningPass<TuneBackendPlacement>(
      registry,
      PassDeclaration<Options>{
          .name = "TuneBackendPlacement",
          .summary = "Choose by measurement which subgraphs run on external backends (oneDNN, "
                     "cuBLAS) and which on our own kernels (Collage-style dynamic program).",
          .required = {"InferType"},
          .arguments = {{"backends", &Options::backends,
                         "comma-separated external backends to consider (empty: every available "
                         "one)"},
                        {"measure_pieces", &Options::measure_pieces,
                         "1: measure pattern pieces alone and run the dynamic program; 0: compare "
                         "only all-own and all-backend"},
                        {"keep", &Options::keep,
                         "when the eval passes nest tuning passes: screen the whole-module "
                         "placements with default kernels first and tune only the best `keep` (0: "
                         "tune every placement)"}},
          // Unknown backend names fail when the pipeline is made.
          .check = [](const Options& options) { SelectBackends(options.backends); }});
}

}  // namespace tandem::passes
