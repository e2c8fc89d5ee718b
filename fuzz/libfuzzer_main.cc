// The libFuzzer entry of one fuzz target: TANDEM_FUZZ_FUNCTION (a compile definition, e.g.
// tandem::fuzz::KernelText) names which.
#include "fuzz/fuzz_targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return TANDEM_FUZZ_FUNCTION(data, size);
}
