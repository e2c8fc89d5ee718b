// The placement pass's dynamic program on hand-made pieces: the exact cover of least time, the
// guesses where a budget left longest chains unmeasured, and our kernels' share of the cover.
#include "passes/tuning/cover_program.h"

#include <gtest/gtest.h>

#include <vector>

namespace tandem::passes {
namespace {

constexpr double kUnmeasured = std::numeric_limits<double>::infinity();

// Two anchors, a convolution (1) with its activation (2) and a second convolution (3): oneDNN
// takes 1-2 and 3, ours any split.
std::vector<Piece> TwoAnchors(double onednn_first, double own_first, double onednn_second,
                              double own_second) {
  return {
      {{1, 2}, "onednn", "convolution", onednn_first},
      {{1, 2}, "", "", own_first},
      {{1}, "", "", 5.0},
      {{2}, "", "", 5.0},
      {{3}, "onednn", "convolution", onednn_second},
      {{3}, "", "", own_second},
  };
}

TEST(CoverProgram, CoversEveryNodeOnceAtTheLeastTime) {
  std::vector<Piece> pieces = TwoAnchors(2.0, 1.0, 1.0, 3.0);
  std::vector<size_t> chosen = CoverProgram(pieces).Solve();
  EXPECT_EQ(chosen, (std::vector<size_t>{1, 4}));
  // Unmeasured pieces are never chosen; no cover when an anchor has none measured.
  pieces[4].seconds = kUnmeasured;
  pieces[5].seconds = kUnmeasured;
  EXPECT_TRUE(CoverProgram(pieces).Solve().empty());
}

TEST(CoverProgram, GuessesTheUnmeasuredLongestChainsOnOneSide) {
  std::vector<Piece> pieces = TwoAnchors(2.0, 1.0, kUnmeasured, kUnmeasured);
  std::vector<bool> unmeasured = {false, false, false, false, true, true};
  std::vector<Piece> backend = WithGuesses(pieces, unmeasured, /*own=*/false);
  EXPECT_EQ(backend[4].seconds, 0.0);
  EXPECT_EQ(backend[5].seconds, kLastResort);
  EXPECT_EQ(backend[1].seconds, 1.0);  // measured pieces keep their times
  EXPECT_EQ(CoverProgram(backend).Solve(), (std::vector<size_t>{1, 4}));
  std::vector<Piece> own = WithGuesses(pieces, unmeasured, /*own=*/true);
  EXPECT_EQ(CoverProgram(own).Solve(), (std::vector<size_t>{1, 5}));
  // A shorter piece left unmeasured is not a longest chain: not guessed.
  std::vector<bool> shorter = {false, false, true, false, true, true};
  EXPECT_EQ(WithGuesses(pieces, shorter, false)[2].seconds, 5.0);
}

TEST(CoverProgram, OwnShareCountsTheMeasuredPiecesOfTheBackendGuessingCover) {
  // Ours wins the first anchor (1 ms), oneDNN the second (1 ms): half of the time is ours.
  std::vector<bool> measured(6, false);
  EXPECT_DOUBLE_EQ(OwnShareOfCover(TwoAnchors(2.0, 1.0, 1.0, 3.0), measured), 0.5);
  // oneDNN wins both: nothing for our kernels.
  EXPECT_DOUBLE_EQ(OwnShareOfCover(TwoAnchors(0.5, 1.0, 1.0, 3.0), measured), 0.0);
  // The second anchor unmeasured: guessed on oneDNN and left out, so the share is the first's.
  std::vector<bool> second_unmeasured = {false, false, false, false, true, true};
  EXPECT_DOUBLE_EQ(
      OwnShareOfCover(TwoAnchors(2.0, 1.0, kUnmeasured, kUnmeasured), second_unmeasured), 1.0);
  // Nothing measured at all: no share.
  std::vector<bool> none_measured(6, true);
  EXPECT_DOUBLE_EQ(OwnShareOfCover(TwoAnchors(kUnmeasured, kUnmeasured, kUnmeasured, kUnmeasured),
                                   none_measured),
                   0.0);
}

}  // namespace
}  // namespace tandem::passes
