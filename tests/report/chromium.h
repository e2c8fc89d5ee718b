// Helpers of the tuning report's browser tests: finding headless Chromium (Debian package
// `chromium`), reading what it writes, and looking into its PNG screenshots.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <unordered_set>
#include <vector>

#ifdef TANDEM_HAVE_ZLIB
#include <zlib.h>
#endif

namespace tandem::testing {

namespace fs = std::filesystem;

inline std::optional<fs::path> FindChromium() {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    for (const char* name : {"chromium", "chromium-browser"}) {
      fs::path candidate = fs::path(dir) / name;
      std::error_code error;
      if (fs::is_regular_file(candidate, error)) return candidate;
    }
  }
  return std::nullopt;
}

inline std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

inline uint32_t BigEndian32(const std::string& bytes, size_t at) {
  return (uint32_t{static_cast<uint8_t>(bytes[at])} << 24) |
         (uint32_t{static_cast<uint8_t>(bytes[at + 1])} << 16) |
         (uint32_t{static_cast<uint8_t>(bytes[at + 2])} << 8) |
         uint32_t{static_cast<uint8_t>(bytes[at + 3])};
}

struct PngStats {
  uint32_t width = 0, height = 0;
  bool decoded = false;  // pixels were read (8-bit RGB/RGBA, not interlaced, zlib)
  size_t distinct_colors = 0;
  double non_white_fraction = 0;
};

// Reads the PNG header and, where it can, the pixels.
inline PngStats InspectPng(const std::string& png) {
  PngStats stats;
  if (png.size() < 33 || png.compare(0, 8, "\x89PNG\r\n\x1a\n") != 0) return stats;
  stats.width = BigEndian32(png, 16);
  stats.height = BigEndian32(png, 20);
#ifdef TANDEM_HAVE_ZLIB
  int depth = static_cast<uint8_t>(png[24]), color = static_cast<uint8_t>(png[25]);
  int interlace = static_cast<uint8_t>(png[28]);
  if (depth != 8 || (color != 2 && color != 6) || interlace != 0) return stats;
  std::string compressed;
  for (size_t at = 8; at + 8 <= png.size();) {
    uint32_t length = BigEndian32(png, at);
    if (png.compare(at + 4, 4, "IDAT") == 0) compressed += png.substr(at + 8, length);
    at += 12 + length;
  }
  const size_t channels = color == 6 ? 4 : 3, stride = stats.width * channels;
  std::vector<uint8_t> raw(stats.height * (stride + 1));
  uLongf size = raw.size();
  if (uncompress(raw.data(), &size, reinterpret_cast<const Bytef*>(compressed.data()),
                 compressed.size()) != Z_OK ||
      size != raw.size()) {
    return stats;
  }
  std::vector<uint8_t> previous(stride, 0), row(stride);
  std::unordered_set<uint32_t> colors;
  size_t non_white = 0;
  for (uint32_t y = 0; y < stats.height; ++y) {
    const uint8_t* line = &raw[y * (stride + 1)];
    for (size_t x = 0; x < stride; ++x) {
      int a = x >= channels ? row[x - channels] : 0, b = previous[x];
      int c = x >= channels ? previous[x - channels] : 0;
      int predictor = 0;
      switch (line[0]) {
        case 1:
          predictor = a;
          break;
        case 2:
          predictor = b;
          break;
        case 3:
          predictor = (a + b) / 2;
          break;
        case 4: {
          int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
          predictor = pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
          break;
        }
        default:
          break;
      }
      row[x] = static_cast<uint8_t>(line[1 + x] + predictor);
    }
    for (size_t x = 0; x < stride; x += channels) {
      uint32_t rgb = (uint32_t{row[x]} << 16) | (uint32_t{row[x + 1]} << 8) | row[x + 2];
      colors.insert(rgb);
      non_white += rgb != 0xffffff;
    }
    previous.swap(row);
  }
  stats.decoded = true;
  stats.distinct_colors = colors.size();
  stats.non_white_fraction = static_cast<double>(non_white) / (double(stats.width) * stats.height);
#endif
  return stats;
}

}  // namespace tandem::testing
