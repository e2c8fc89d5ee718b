// Tuning from Python: tune (what `tandem tune` does, tools::TuneModel), replay a trace, and read
// a tuning database (what `tandem db` reads): workloads, records and tuning runs as objects.
#include <fmt/format.h>
#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include "ir/error.h"
#include "passes/pipeline_text.h"
#include "passes/tuning_pass.h"
#include "python/bindings/bindings.h"
#include "python/bindings/pipeline.h"
#include "tools/commands.h"
#include "tuning/session/tuning_run.h"

namespace tandem::python {

namespace {

struct PyDatabase {
  std::shared_ptr<tuning::Database> database;
};

tools::TunedModel Tune(const ir::IRModule& model, const py::object& pipeline, const std::string& db,
                       int64_t trials, double time_budget, int threads, const py::object& progress,
                       const std::string& target, uint64_t seed, bool retune, int repeats,
                       const std::string& name, int confirm_rounds, bool in_process) {
  tools::TuneOptions options;
  if (py::isinstance<py::str>(pipeline)) {
    options.pipeline.name = pipeline.cast<std::string>();
  } else {
    options.pipeline.text = passes::PrintPipeline(*ToPass(pipeline, target));
  }
  options.pipeline.target = target;
  options.pipeline.database = db;
  options.pipeline.seed = seed;
  options.model.name = name.empty() ? "python_model" : name;
  options.trials = trials;
  options.time_budget = time_budget;
  options.threads = threads;
  options.retune = retune;
  options.repeats = repeats;
  options.confirm_rounds = confirm_rounds;
  options.in_process = in_process;
  tools::TuneProgress report;
  if (!progress.is_none()) {
    report = [progress](const tuning::ProgressEvent& event, const tuning::EvaluationCounts& total,
                        double elapsed) {
      CallPython("the progress callback of tune", [&] {
        py::dict info;
        info["pass"] = event.pass;
        info["done"] = event.done;
        info["total"] = event.total;
        info["best_seconds"] = event.best_seconds;
        info["measured"] = total.measured;
        info["reused"] = total.reused;
        info["failed"] = total.failed;
        info["elapsed_seconds"] = elapsed;
        progress(info);
      });
    };
  }
  py::gil_scoped_release release;
  return tools::TuneModel(model, options, report);
}

py::dict Counts(const tuning::EvaluationCounts& counts) {
  py::dict out;
  out["requested"] = counts.requested;
  out["reused"] = counts.reused;
  out["measured"] = counts.measured;
  out["failed"] = counts.failed;
  out["over_budget"] = counts.over_budget;
  out["confirmed"] = counts.confirmed;
  return out;
}

void BindRecordsAndRuns(py::module_& m) {
  py::class_<tuning::TuningRecord>(m, "TuningRecord", "One measurement of one candidate.")
      .def_readonly("workload_hash", &tuning::TuningRecord::workload_hash)
      .def_readonly("target", &tuning::TuningRecord::target)
      .def_readonly("candidate_hash", &tuning::TuningRecord::candidate_hash)
      .def_readonly("run_seconds", &tuning::TuningRecord::run_seconds)
      .def_readonly("error", &tuning::TuningRecord::error)
      .def_readonly("measured_at", &tuning::TuningRecord::measured_at)
      .def_readonly("measured_by", &tuning::TuningRecord::measured_by)
      .def_readonly("trace_json", &tuning::TuningRecord::trace_json)
      .def_property_readonly(
          "trace", [](const tuning::TuningRecord& r) { return ir::Trace::FromJson(r.trace_json); })
      .def_property_readonly("ok", &tuning::TuningRecord::ok)
      .def_property_readonly("median_seconds", &tuning::TuningRecord::median_seconds);

  py::class_<tuning::TuningRun>(m, "TuningRun", "What one tuning run did (tuning_run.h).")
      .def_readonly("model", &tuning::TuningRun::model)
      .def_readonly("model_hash", &tuning::TuningRun::model_hash)
      .def_readonly("pipeline", &tuning::TuningRun::pipeline)
      .def_readonly("target", &tuning::TuningRun::target)
      .def_readonly("trial_budget", &tuning::TuningRun::trial_budget)
      .def_readonly("seed", &tuning::TuningRun::seed)
      .def_readonly("trace", &tuning::TuningRun::trace)
      .def_readonly("before_seconds", &tuning::TuningRun::before_seconds)
      .def_readonly("after_seconds", &tuning::TuningRun::after_seconds)
      .def_readonly("after_error", &tuning::TuningRun::after_error)
      .def_readonly("tuning_seconds", &tuning::TuningRun::tuning_seconds)
      .def_readonly("measured_at", &tuning::TuningRun::measured_at)
      .def_property_readonly("decisions",
                             [](const tuning::TuningRun& run) {
                               py::list out;
                               for (const tuning::TuningDecision& d : run.decisions) {
                                 py::dict entry;
                                 entry["pass"] = d.pass;
                                 entry["trace"] = d.trace;
                                 entry["seconds"] = d.result.run_seconds;
                                 entry["baseline_seconds"] = d.baseline_seconds;
                                 out.append(entry);
                               }
                               return out;
                             })
      .def_property_readonly("counts", [](const tuning::TuningRun& run) {
        py::dict out;
        for (const auto& [pass, counts] : run.counts) out[py::str(pass)] = Counts(counts);
        return out;
      });

  py::class_<tools::TunedModel>(m, "TuneResult", "What tune made.")
      .def_readonly("module", &tools::TunedModel::module, "the tuned module")
      .def_readonly("run", &tools::TunedModel::run, "the run as stored in the database")
      .def_property_readonly("trace", [](const tools::TunedModel& t) { return t.run.trace; })
      .def_readonly("replayed", &tools::TunedModel::replayed,
                    "whether an earlier run's decisions were replayed instead of tuning")
      .def_readonly("ok", &tools::TunedModel::ok, "whether the tuned module measured fine");
}

}  // namespace

void BindTuning(py::module_& m) {
  BindRecordsAndRuns(m);
  m.def("tune", &Tune, py::arg("module"), py::arg("pipeline") = "graph_tuning", py::arg("db") = "",
        py::arg("trials") = 0, py::arg("time_budget") = 0.0, py::arg("threads") = 0,
        py::arg("progress") = py::none(), py::arg("target") = "llvm", py::arg("seed") = 0,
        py::arg("retune") = false, py::arg("repeats") = 5, py::arg("name") = "",
        py::arg("confirm_rounds") = tuning::TuningSession::Options().confirm_rounds,
        py::arg("in_process") = false,
        "tunes the module as `tandem tune` does: measurements and the run go to the database "
        "file `db` (in memory when empty); an earlier run with the same model, pipeline, budget "
        "and seed is replayed unless retune; progress(dict) is called after every batch");
  m.def(
      "replay",
      [](const ir::IRModule& module, const ir::Trace& trace, const std::string& target) {
        passes::PassContext context;
        context.target = ir::ParseTarget(target);
        py::gil_scoped_release release;
        return passes::ReplayTrace(module, trace, context);
      },
      py::arg("module"), py::arg("trace"), py::arg("target") = "llvm",
      "the module a pipeline trace's decisions make of `module`, measuring nothing");

  py::class_<PyDatabase>(m, "Database", "A tuning database file, opened read-only.")
      .def("workloads",
           [](const PyDatabase& db) {
             py::list out;
             for (const tuning::Workload& w : db.database->Workloads()) {
               py::dict entry;
               entry["hash"] = w.hash;
               entry["kind"] = w.kind;
               entry["text"] = w.text;
               out.append(entry);
             }
             return out;
           })
      .def("targets",
           [](const PyDatabase& db, const std::string& hash) { return db.database->Targets(hash); })
      .def(
          "records",
          [](const PyDatabase& db, const std::string& hash, const std::string& target) {
            std::vector<tuning::TuningRecord> out;
            std::vector<std::string> targets =
                target.empty() ? db.database->Targets(hash) : std::vector<std::string>{target};
            for (const std::string& t : targets) {
              std::vector<tuning::TuningRecord> records = db.database->Records(hash, t);
              out.insert(out.end(), records.begin(), records.end());
            }
            return out;
          },
          py::arg("workload_hash"), py::arg("target") = "",
          "the records of a workload (on every target when none is given), in commit order")
      .def(
          "runs", [](const PyDatabase& db) { return tuning::TuningRuns(*db.database); },
          "every stored tuning run, in commit order")
      .def("__len__", [](const PyDatabase& db) { return db.database->NumRecords(); });
  m.def(
      "open_database",
      [](const std::string& path) {
        return PyDatabase{std::shared_ptr<tuning::Database>(tools::OpenExistingDatabase(path))};
      },
      py::arg("path"), "opens an existing tuning database read-only");
}

}  // namespace tandem::python
