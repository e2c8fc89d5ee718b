// ExpectErrorContaining: the check that running `body` throws an ir::Error whose message holds
// `part` (the user-facing text a test pins), as a non-fatal gtest failure otherwise.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "ir/error.h"

namespace tandem::testing {

template <typename Body>
void ExpectErrorContaining(Body body, const std::string& part) {
  try {
    body();
    ADD_FAILURE() << "no error; expected one containing: " << part;
  } catch (const ir::Error& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

}  // namespace tandem::testing
