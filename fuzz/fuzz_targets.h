// Fuzz targets: every parser of hostile input Tandem has, as functions of raw bytes. Each must
// either accept its input or throw tandem::ir::Error; anything else (a crash, a hang, another
// exception, a sanitizer report) is a finding. Built into libFuzzer programs by scripts/fuzz.sh
// (clang, ASan + UBSan) and replayed over the committed corpus (fuzz/corpus/<target>/) by the
// normal test suite.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tandem::fuzz {

// ONNX bytes through the importer (frontend::ImportOnnxModel).
int OnnxImporter(const uint8_t* data, size_t size);
// Pipeline text through passes::ParsePipeline; what parses prints and parses again.
int PipelineText(const uint8_t* data, size_t size);
// Graph IR text through ir::ParseModule; what parses prints and parses again.
int GraphText(const uint8_t* data, size_t size);
// Kernel IR text through ir::ParseKernel; what parses prints and parses again.
int KernelText(const uint8_t* data, size_t size);
// JSON lines of a database export through Database::ImportJsonLines, then every imported
// record's trace through DecodeRecordTrace.
int Records(const uint8_t* data, size_t size);

struct Target {
  std::string name;  // also the corpus folder's name
  int (*run)(const uint8_t* data, size_t size);
};
// Every target, in the order above.
const std::vector<Target>& Targets();

}  // namespace tandem::fuzz
