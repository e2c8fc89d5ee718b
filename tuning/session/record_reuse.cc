#include "tuning/session/record_reuse.h"

#include <nlohmann/json.hpp>
#include <optional>

#include "ir/error.h"
#include "ir/json_depth.h"

namespace tandem::tuning {

namespace {

// The number `key` of the `measured_by` JSON object, or nullopt when the text is not such an
// object or the field is missing or not a number.
std::optional<double> MeasuredByNumber(const std::string& measured_by, const char* key) {
  try {
    ir::CheckJsonDepth(measured_by);
  } catch (const ir::Error&) {
    return std::nullopt;
  }
  nlohmann::json json = nlohmann::json::parse(measured_by, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object()) return std::nullopt;
  auto it = json.find(key);
  if (it == json.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

bool StartsWith(const std::string& text, const char* prefix) {
  return text.rfind(prefix, 0) == 0;
}

}  // namespace

std::string MeasuredByJson(const std::string& runner, const MeasureOptions& measure) {
  nlohmann::json json = {{"runner", runner},
                         {"warmup_runs", measure.warmup_runs},
                         {"min_warmup_seconds", measure.min_warmup_seconds},
                         {"repeats", measure.repeats},
                         {"min_repeat_seconds", measure.min_repeat_seconds},
                         {"flush_cache", measure.flush_cache},
                         {"num_threads", measure.num_threads},
                         {"timeout_seconds", measure.timeout_seconds},
                         {"tolerance", measure.tolerance}};
  return json.dump();
}

bool RecordAnswersUnder(const TuningRecord& record, const MeasureOptions& options) {
  if (record.ok()) {
    std::optional<double> tolerance = MeasuredByNumber(record.measured_by, "tolerance");
    return !tolerance || *tolerance <= options.tolerance;
  }
  if (StartsWith(record.error, "timed out")) {
    std::optional<double> timeout = MeasuredByNumber(record.measured_by, "timeout_seconds");
    return timeout && *timeout >= options.timeout_seconds;
  }
  if (StartsWith(record.error, "wrong result")) {
    std::optional<double> tolerance = MeasuredByNumber(record.measured_by, "tolerance");
    return tolerance && *tolerance >= options.tolerance;
  }
  return true;
}

}  // namespace tandem::tuning
