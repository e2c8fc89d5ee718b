// PassDeclaration: the one declaration of a pass, from which everything else about it is derived.
//
// A pass states its name, its summary (doc line), the passes it requires and its typed arguments
// once. Its options live in a struct whose default member initializers are the defaults:
//
//   struct FuseOpsOptions {
//     int64_t max_size = 64;
//     bool into_reductions = true;
//   };
//   RegisterFunctionPass(registry,
//       PassDeclaration<FuseOpsOptions>{
//           .name = "FuseOps",
//           .summary = "Group op calls into fused kernels ...",
//           .required = {"InferType"},
//           .arguments = {{"max_size", &FuseOpsOptions::max_size, "largest number of calls"},
//                         {"into_reductions", &FuseOpsOptions::into_reductions, "1: ..."}}},
//       [](const ir::IRModule& module, PassContext&, const FuseOpsOptions& options) { ... });
//
// From it come the registry entry (PassDef: name, doc, argument specs with defaults taken from
// `Options{}`, required passes), the parsing of the checked arguments into `Options` when the
// pass is created, the PassInfo of the created pass, `tandem pipelines --passes` and
// docs/passes.md (passes/pass_docs.h).
//
// An argument's kind follows its member's type: int64_t -> int; bool -> int (0/1; any nonzero
// value is true); double -> float (an integer is accepted); std::string -> string;
// std::vector<int64_t> -> int list; std::vector<double> -> float list. A member of a base of
// `Options` may be named (the search options of tuning passes). The created pass keeps its
// arguments as given, so the pipeline text and traces print exactly what was written.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "ir/error.h"
#include "passes/pass.h"
#include "passes/pass_registry.h"

namespace tandem::passes {

// How a member type maps to an argument kind and back. Only the specializations below exist: an
// option of another type does not compile.
template <typename T>
struct OptionTraits;

template <>
struct OptionTraits<int64_t> {
  static constexpr ir::AttrKind kKind = ir::AttrKind::kInt;
  static ir::AttrValue ToValue(int64_t v) { return v; }
};

template <>
struct OptionTraits<bool> {
  static constexpr ir::AttrKind kKind = ir::AttrKind::kInt;
  static ir::AttrValue ToValue(bool v) { return int64_t{v ? 1 : 0}; }
};

template <>
struct OptionTraits<double> {
  static constexpr ir::AttrKind kKind = ir::AttrKind::kFloat;
  static ir::AttrValue ToValue(double v) { return v; }
};

template <>
struct OptionTraits<std::string> {
  static constexpr ir::AttrKind kKind = ir::AttrKind::kString;
  static ir::AttrValue ToValue(const std::string& v) { return v; }
};

template <>
struct OptionTraits<std::vector<int64_t>> {
  static constexpr ir::AttrKind kKind = ir::AttrKind::kInts;
  static ir::AttrValue ToValue(const std::vector<int64_t>& v) { return v; }
};

template <>
struct OptionTraits<std::vector<double>> {
  static constexpr ir::AttrKind kKind = ir::AttrKind::kFloats;
  static ir::AttrValue ToValue(const std::vector<double>& v) { return v; }
};

// Stores `value` (already of `kind`, or an int for a float) into `member`; false when the value
// has another kind.
template <typename T>
bool StoreOption(T& member, const ir::AttrValue& value) {
  if constexpr (std::is_same_v<T, bool>) {
    if (const auto* i = std::get_if<int64_t>(&value)) {
      member = *i != 0;
      return true;
    }
  } else if constexpr (std::is_same_v<T, double>) {
    if (const auto* d = std::get_if<double>(&value)) {
      member = *d;
      return true;
    }
    if (const auto* i = std::get_if<int64_t>(&value)) {
      member = static_cast<double>(*i);
      return true;
    }
  } else if (const auto* v = std::get_if<T>(&value)) {
    member = *v;
    return true;
  }
  return false;
}

// One argument of a pass: its name, the member of `Options` that holds it, and its doc line.
template <typename Options>
class PassOption {
 public:
  template <typename T, typename Owner>
  PassOption(std::string name, T Owner::*member, std::string doc)
      : name_(std::move(name)),
        doc_(std::move(doc)),
        kind_(OptionTraits<T>::kKind),
        get_([member](const Options& o) { return OptionTraits<T>::ToValue(o.*member); }),
        set_([member](Options& o, const ir::AttrValue& v) { return StoreOption(o.*member, v); }) {
    static_assert(std::is_base_of_v<Owner, Options>, "the member must be one of the options");
  }

  const std::string& name() const { return name_; }
  const std::string& doc() const { return doc_; }
  ir::AttrKind kind() const { return kind_; }
  // The argument's value in `options` (for Options{}: its default).
  ir::AttrValue Get(const Options& options) const { return get_(options); }
  // Sets the member from `value`; false when `value` has the wrong kind.
  bool Set(Options& options, const ir::AttrValue& value) const { return set_(options, value); }

 private:
  std::string name_;
  std::string doc_;
  ir::AttrKind kind_;
  std::function<ir::AttrValue(const Options&)> get_;
  std::function<bool(Options&, const ir::AttrValue&)> set_;
};

// The options of a pass without arguments.
struct NoOptions {};

// The one declaration of a pass (see the file comment).
template <typename Options>
struct PassDeclaration {
  std::string name;                   // stable registered name, e.g. "FuseOps"
  std::string summary;                // one line for `tandem pipelines --passes` and the docs
  std::vector<std::string> required;  // passes that must run before this one
  std::vector<PassOption<Options>> arguments;
  // Optional: checks the parsed options when the pass is created (so a bad value in pipeline
  // text fails when the pipeline is made); throws ir::Error.
  std::function<void(const Options&)> check;

  // The argument specs, defaults taken from `Options{}`, in declaration order.
  std::vector<ir::AttrSpec> Specs() const {
    const Options defaults = Options();
    std::vector<ir::AttrSpec> specs;
    for (const PassOption<Options>& a : arguments) {
      specs.push_back({a.name(), a.kind(), a.Get(defaults), a.doc()});
    }
    return specs;
  }

  // `Options{}` with the given arguments set. An unknown name or a value of the wrong kind is an
  // ir::Error naming the pass (the registry reports them before, in its own words, for passes
  // created through it).
  Options Parse(const PassArguments& given) const {
    Options options = Options();
    for (const auto& [key, value] : given) {
      const PassOption<Options>* option = nullptr;
      for (const PassOption<Options>& a : arguments) {
        if (a.name() == key) option = &a;
      }
      ir::ErrorLocation where{.pass = name};
      if (!option) throw ir::Error(fmt::format("pass '{}' has no argument '{}'", name, key), where);
      if (!option->Set(options, value)) {
        throw ir::Error(fmt::format("pass '{}': argument '{}' must be {} but is {}", name, key,
                                    ir::ToString(option->kind()), ir::ToString(value)),
                        where);
      }
    }
    return options;
  }

  // Parse, then `check`.
  Options Create(const PassArguments& given) const {
    Options options = Parse(given);
    if (check) check(options);
    return options;
  }

  PassInfo Info(bool is_tuning) const { return PassInfo{name, required, is_tuning}; }

  // The registry entry; `create` makes the pass from the checked arguments and eval passes.
  PassDef Def(bool is_tuning, bool takes_eval_passes,
              std::function<PassPtr(PassArguments, std::vector<PassPtr>)> create) const {
    return PassDef{.name = name,
                   .doc = summary,
                   .arguments = Specs(),
                   .required = required,
                   .is_tuning = is_tuning,
                   .takes_eval_passes = takes_eval_passes,
                   .create = std::move(create)};
  }
};

// What a heuristic pass does, given its parsed options.
template <typename Options>
using PassFunction = std::function<ir::IRModule(const ir::IRModule&, PassContext&, const Options&)>;

// Registers a heuristic pass: a FunctionPass running `function` with the options parsed (and
// checked) when the pass is created.
template <typename Options>
void RegisterFunctionPass(PassRegistry& registry, PassDeclaration<Options> declaration,
                          std::type_identity_t<PassFunction<Options>> function) {
  auto decl = std::make_shared<const PassDeclaration<Options>>(std::move(declaration));
  registry.Register(decl->Def(
      /*is_tuning=*/false, /*takes_eval_passes=*/false,
      [decl, function](PassArguments args, std::vector<PassPtr>) -> PassPtr {
        Options options = decl->Create(args);
        return std::make_shared<FunctionPass>(
            decl->Info(false), std::move(args),
            [options = std::move(options), function](const ir::IRModule& module,
                                                     PassContext& context, const PassArguments&) {
              return function(module, context, options);
            });
      }));
}

// Registers a tuning pass class `T`, constructed as T(PassInfo, PassArguments, eval passes,
// Options) with the options parsed (and checked) when the pass is created.
template <typename T, typename Options>
void RegisterTuningPass(PassRegistry& registry, PassDeclaration<Options> declaration,
                        bool takes_eval_passes = true) {
  auto decl = std::make_shared<const PassDeclaration<Options>>(std::move(declaration));
  registry.Register(decl->Def(
      /*is_tuning=*/true, takes_eval_passes,
      [decl](PassArguments args, std::vector<PassPtr> eval) -> PassPtr {
        Options options = decl->Create(args);
        return std::make_shared<T>(decl->Info(true), std::move(args), std::move(eval),
                                   std::move(options));
      }));
}

}  // namespace tandem::passes
