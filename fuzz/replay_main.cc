// tandem_fuzz_replay: runs every fuzz target over its committed corpus (fuzz/corpus/<target>/,
// or CORPUS_ROOT/<target>/ when given), the deterministic part of fuzzing that the normal test
// suite runs. A target that crashes or throws anything but tandem::ir::Error on an input fails the
// run, naming the file.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>

#include "fuzz/fuzz_targets.h"

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  fs::path root = argc > 1 ? fs::path(argv[1]) : fs::path(TANDEM_SOURCE_DIR) / "fuzz" / "corpus";
  int failures = 0;
  for (const tandem::fuzz::Target& target : tandem::fuzz::Targets()) {
    fs::path dir = root / target.name;
    if (!fs::is_directory(dir)) {
      std::cerr << "no corpus for " << target.name << " at " << dir << "\n";
      ++failures;
      continue;
    }
    size_t inputs = 0;
    for (const auto& entry : fs::directory_iterator(dir)) {
      if (!entry.is_regular_file()) continue;
      std::ifstream in(entry.path(), std::ios::binary);
      std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      try {
        target.run(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
      } catch (const std::exception& e) {
        std::cerr << target.name << ": " << entry.path() << " threw: " << e.what() << "\n";
        ++failures;
      }
      ++inputs;
    }
    std::cout << target.name << ": " << inputs << " corpus inputs replayed\n";
    if (inputs == 0) ++failures;
  }
  return failures == 0 ? 0 : 1;
}
