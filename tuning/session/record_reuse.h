// Which stored results a tuning session may reuse instead of measuring again.
//
// A record's timings depend on the options in its record key (warm-up, repeats, minimum repeat
// time, cache flushing; see RecordKey), so records are looked up under that key. Two options are
// left out of the key because they only decide whether a measurement passes: the timeout and the
// tolerance of the output check. A record says which it was measured under (its `measured_by`),
// and RecordAnswersUnder decides whether that verdict still holds under the current ones.
#pragma once

#include <string>

#include "tuning/database/database.h"
#include "tuning/measure/measure.h"

namespace tandem::tuning {

// The `measured_by` JSON of a record measured with `measure`; `runner` says what was measured
// ("graph", "kernel", "graph-confirm-3-rounds").
std::string MeasuredByJson(const std::string& runner, const MeasureOptions& measure);

// Whether `record` answers for its candidate measured now with `options`:
// - a success does unless it passed a looser tolerance than `options.tolerance`;
// - a time-out does when it timed out under a timeout at least `options.timeout_seconds`;
// - a wrong result does when it failed a tolerance at least `options.tolerance`;
// - any other failure (a build error, a crash) does not depend on these options and answers.
// A record that does not say its timeout or tolerance (written before they were recorded, or
// unreadable) answers as a success and never as a time-out or a wrong result.
bool RecordAnswersUnder(const TuningRecord& record, const MeasureOptions& options);

}  // namespace tandem::tuning
