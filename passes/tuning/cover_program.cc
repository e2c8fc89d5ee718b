#include "passes/tuning/cover_program.h"

#include <algorithm>
#include <set>

namespace tandem::passes {

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

}  // namespace

CoverProgram::CoverProgram(const std::vector<Piece>& pieces) : pieces_(pieces) {
  std::set<ir::ValueId> all;
  for (size_t p = 0; p < pieces.size(); ++p) {
    all.insert(pieces[p].nodes.begin(), pieces[p].nodes.end());
    starting_at_[pieces[p].nodes.front()].push_back(p);
  }
  order_.assign(all.begin(), all.end());
}

std::vector<size_t> CoverProgram::Solve() {
  double total = Best(0, {});
  std::vector<size_t> chosen;
  if (total == kInfinity) return chosen;
  size_t position = 0;
  std::vector<ir::ValueId> covered;
  while (position < order_.size()) {
    const Entry& entry = memo_.at({position, covered});
    if (entry.piece >= 0) {
      chosen.push_back(static_cast<size_t>(entry.piece));
      covered = Advance(covered, position, &pieces_[static_cast<size_t>(entry.piece)]);
    } else {
      covered = Advance(covered, position, nullptr);
    }
    ++position;
  }
  return chosen;
}

std::vector<ir::ValueId> CoverProgram::Advance(const std::vector<ir::ValueId>& covered,
                                               size_t position, const Piece* piece) const {
  std::set<ir::ValueId> next(covered.begin(), covered.end());
  next.erase(order_[position]);
  if (piece != nullptr) {
    for (ir::ValueId id : piece->nodes) {
      if (id != order_[position]) next.insert(id);
    }
  }
  return {next.begin(), next.end()};
}

double CoverProgram::Best(size_t position, const std::vector<ir::ValueId>& covered) {
  if (position == order_.size()) return 0;
  auto key = std::make_pair(position, covered);
  if (auto found = memo_.find(key); found != memo_.end()) return found->second.seconds;
  ir::ValueId node = order_[position];
  Entry entry{kInfinity, -1};
  if (std::binary_search(covered.begin(), covered.end(), node)) {
    entry.seconds = Best(position + 1, Advance(covered, position, nullptr));
  } else if (auto starting = starting_at_.find(node); starting != starting_at_.end()) {
    for (size_t p : starting->second) {
      const Piece& piece = pieces_[p];
      if (piece.seconds == kInfinity) continue;
      bool overlaps = std::any_of(piece.nodes.begin(), piece.nodes.end(), [&](ir::ValueId id) {
        return std::binary_search(covered.begin(), covered.end(), id);
      });
      if (overlaps) continue;
      double seconds = piece.seconds + Best(position + 1, Advance(covered, position, &piece));
      if (seconds < entry.seconds) entry = {seconds, static_cast<int64_t>(p)};
    }
  }
  memo_[key] = entry;
  return entry.seconds;
}

LongestLengths LongestAtEachAnchor(const std::vector<Piece>& pieces) {
  LongestLengths longest;
  for (const Piece& piece : pieces) {
    size_t& length = longest[{piece.nodes.front(), piece.backend}];
    length = std::max(length, piece.nodes.size());
  }
  return longest;
}

bool IsLongest(const Piece& piece, const LongestLengths& longest) {
  return piece.nodes.size() == longest.at({piece.nodes.front(), piece.backend});
}

namespace {

std::vector<bool> Guessed(const std::vector<Piece>& pieces, const std::vector<bool>& unmeasured) {
  LongestLengths longest = LongestAtEachAnchor(pieces);
  std::vector<bool> guessed(pieces.size(), false);
  for (size_t p = 0; p < pieces.size(); ++p) {
    guessed[p] = unmeasured[p] && IsLongest(pieces[p], longest);
  }
  return guessed;
}

// `pieces` with the guessed ones (`guessed`) at no cost on the guessed side and kLastResort on
// the other.
std::vector<Piece> ApplyGuesses(const std::vector<Piece>& pieces, const std::vector<bool>& guessed,
                                bool own) {
  std::vector<Piece> result = pieces;
  for (size_t p = 0; p < pieces.size(); ++p) {
    if (guessed[p]) result[p].seconds = pieces[p].backend.empty() == own ? 0 : kLastResort;
  }
  return result;
}

}  // namespace

std::vector<Piece> WithGuesses(const std::vector<Piece>& pieces,
                               const std::vector<bool>& unmeasured, bool own) {
  return ApplyGuesses(pieces, Guessed(pieces, unmeasured), own);
}

double OwnShareOfCover(const std::vector<Piece>& pieces, const std::vector<bool>& unmeasured) {
  std::vector<bool> guessed = Guessed(pieces, unmeasured);
  std::vector<Piece> with_guesses = ApplyGuesses(pieces, guessed, /*own=*/false);
  double own = 0, total = 0;
  for (size_t p : CoverProgram(with_guesses).Solve()) {
    if (guessed[p]) continue;
    total += pieces[p].seconds;
    if (pieces[p].backend.empty()) own += pieces[p].seconds;
  }
  return total > 0 ? own / total : 0.0;
}

}  // namespace tandem::passes
