#pragma once
// A command's flags, its --help lines and the request they build, all read from the entry point's field
// table (request::Field::flags), so a field is declared once and the CLI cannot drift from the core's
// kinds, ranges and defaults.
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/args.hpp"
#include "core/base/error.hpp"
#include "core/base/request_fields.hpp"

namespace headroom::cli {

struct FlagForm {
  enum class Shape { Value, Switch, Words };
  std::string name;                // without "--"
  const request::Field* field = nullptr;
  Shape shape = Shape::Value;
  std::string text;                // Switch: the value text it stands for
  std::vector<std::pair<std::string, std::string>> words;  // Words: word -> value text
};

// Every form of every field that has one, in table order. Throws Error on a malformed form (a bug).
std::vector<FlagForm> flag_forms(const request::Fields& fields);

// The names Args takes: `extra` plus the table's value flags (or its switches).
std::set<std::string> value_flag_names(const std::vector<FlagForm>& forms, std::set<std::string> extra);
std::set<std::string> switch_names(const std::vector<FlagForm>& forms, std::set<std::string> extra);

// The request fields the given flags set, converted by each field's kind (and unit) and checked against
// its range. Two forms of one field that disagree are an InputError naming both.
nlohmann::json request_from_flags(const Args& args, const std::vector<FlagForm>& forms);

// "  --width N            image width in px (a whole number from 16 to 16384)" lines, one per form.
std::string flags_help(const std::vector<FlagForm>& forms);

// Rethrows an InputError about a request field as one about the flag that sets it (the form the user
// typed when one was given); other errors go on unchanged.
[[noreturn]] void rethrow_as_flag(const InputError& e, const Args& args, const std::vector<FlagForm>& forms);

}  // namespace headroom::cli
