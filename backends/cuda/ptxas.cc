#include "backends/cuda/ptxas.h"

#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <regex>

#include "ir/error.h"

namespace tandem::backends::cuda {

std::string PtxasPath() {
#ifdef TANDEM_PTXAS
  return TANDEM_PTXAS;
#else
  return "";
#endif
}

// Steps:
//   1. the PTX written to a private temporary file;
//   2. ptxas run on it with -v, its output collected;
//   3. the resource lines parsed (one "Used N registers" line per entry, spill and shared
//      memory figures per entry).
PtxasReport AssemblePtx(const std::string& ptx, const std::string& arch) {
  std::string ptxas = PtxasPath();
  if (ptxas.empty() || access(ptxas.c_str(), X_OK) != 0) {
    throw ir::Error("no ptxas: this build found no CUDA toolkit");
  }
  for (char c : arch) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') {
      throw ir::Error(fmt::format("invalid architecture name '{}'", arch));
    }
  }
  // 1. Input file.
  char path[] = "/tmp/tandem-ptxas-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) throw ir::Error("cannot create a temporary file for ptxas");
  close(fd);
  {
    std::ofstream out(path, std::ios::binary);
    out << ptx;
    if (!out) {
      std::remove(path);
      throw ir::Error(fmt::format("cannot write '{}'", path));
    }
  }
  // 2. Run.
  std::string command = fmt::format("'{}' -arch={} -v '{}' -o /dev/null 2>&1", ptxas, arch, path);
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) {
    std::remove(path);
    throw ir::Error(fmt::format("cannot run '{}'", ptxas));
  }
  PtxasReport report;
  std::array<char, 4096> chunk;
  size_t n;
  while ((n = fread(chunk.data(), 1, chunk.size(), pipe)) > 0) report.log.append(chunk.data(), n);
  int status = pclose(pipe);
  std::remove(path);
  report.accepted = status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  // 3. Resources.
  static const std::regex kRegisters(R"(Used (\d+) registers)");
  static const std::regex kSpills(R"((\d+) bytes spill (stores|loads))");
  static const std::regex kShared(R"((\d+) bytes smem)");
  for (std::sregex_iterator it(report.log.begin(), report.log.end(), kRegisters), end; it != end;
       ++it) {
    report.max_registers = std::max(report.max_registers, std::stoi((*it)[1]));
  }
  for (std::sregex_iterator it(report.log.begin(), report.log.end(), kSpills), end; it != end;
       ++it) {
    report.spill_bytes += std::stoll((*it)[1]);
  }
  for (std::sregex_iterator it(report.log.begin(), report.log.end(), kShared), end; it != end;
       ++it) {
    report.shared_bytes = std::max<int64_t>(report.shared_bytes, std::stoll((*it)[1]));
  }
  return report;
}

}  // namespace tandem::backends::cuda
