// ExpectError: runs a callable and checks that it throws an ir::Error whose text contains every
// given part (shared by the ir tests).
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ir/error.h"

namespace tandem::ir::testing {

template <typename Fn>
void ExpectError(Fn fn, const std::vector<std::string>& parts) {
  try {
    fn();
    ADD_FAILURE() << "expected an error containing '" << parts.at(0) << "'";
  } catch (const Error& e) {
    std::string text = e.what();
    for (const std::string& part : parts) {
      EXPECT_NE(text.find(part), std::string::npos) << "'" << part << "' not in: " << text;
    }
  }
}

}  // namespace tandem::ir::testing
