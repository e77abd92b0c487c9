#include "cli/field_flags.hpp"

#include <algorithm>
#include <map>

#include "core/base/units.hpp"

namespace headroom::cli {
namespace {

using nlohmann::json;
using request::Field;
using request::Kind;

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  while (!s.empty()) {
    const std::size_t at = s.find(sep);
    out.push_back(s.substr(0, at));
    if (at == std::string_view::npos) break;
    s.remove_prefix(at + 1);
  }
  return out;
}

FlagForm form_of(const Field& f, std::string_view text) {
  FlagForm form;
  form.field = &f;
  if (const std::size_t colon = text.find(':'); colon != std::string_view::npos) {
    form.name = std::string(text.substr(0, colon));
    form.shape = FlagForm::Shape::Words;
    for (std::string_view w : split(text.substr(colon + 1), '/')) {
      const std::size_t eq = w.find('=');
      if (eq == std::string_view::npos) throw Error("field " + std::string(f.key) + ": flag word '" + std::string(w) + "' has no '='");
      form.words.emplace_back(std::string(w.substr(0, eq)), std::string(w.substr(eq + 1)));
    }
  } else if (const std::size_t eq = text.find('='); eq != std::string_view::npos) {
    form.name = std::string(text.substr(0, eq));
    form.shape = FlagForm::Shape::Switch;
    form.text = std::string(text.substr(eq + 1));
  } else {
    form.name = std::string(text);
    if (f.kind == Kind::Bool) form.shape = FlagForm::Shape::Switch, form.text = "true";
  }
  if (form.name.empty()) throw Error("field " + std::string(f.key) + ": a flag form without a name");
  return form;
}

bool given(const Args& args, const FlagForm& form) {
  return form.shape == FlagForm::Shape::Switch ? args.has(form.name) : args.get(form.name).has_value();
}

std::string flag(const FlagForm& form) { return "--" + form.name; }

std::string unit_name(std::uint64_t unit) { return unit == GiB ? "GiB" : unit == MiB ? "MiB" : format_bytes(unit); }

// A size typed on the command line: the field's range in sizes, not in bytes.
std::string size_expectation(const Field& f) {
  return "expected a size from " + format_bytes(static_cast<std::uint64_t>(f.lo)) + " to " +
         format_bytes(static_cast<std::uint64_t>(f.hi)) + " (a bare number is " + unit_name(f.unit) + ")";
}

json value_of(const FlagForm& form, const std::string& text) {
  const Field& f = *form.field;
  try {
    if (f.kind == Kind::Bytes && f.unit) {
      const std::uint64_t b = parse_size(text, flag(form), f.unit);
      if (static_cast<double>(b) < f.lo || static_cast<double>(b) > f.hi)
        throw InputError(flag(form), size_expectation(f) + ", got '" + text + "'");
      return b;
    }
    if (f.kind == Kind::List || f.kind == Kind::Object || f.kind == Kind::Any) {
      json v = json::parse(text, nullptr, /*allow_exceptions=*/false);
      if (v.is_discarded()) throw InputError(flag(form), "expected JSON text, got '" + text + "'");
      return v;
    }
    return request::value_from_text(f, text);
  } catch (const InputError& e) {
    if (e.field() == flag(form)) throw;
    throw InputError(flag(form), std::string(e.what()).substr(e.field().size() + 2));
  }
}

json value_given(const Args& args, const FlagForm& form) {
  if (form.shape == FlagForm::Shape::Switch) return value_of(form, form.text);
  const std::string text = *args.get(form.name);
  if (form.shape == FlagForm::Shape::Value) return value_of(form, text);
  std::string words;
  for (const auto& [word, value] : form.words) {
    if (word == text) return value_of(form, value);
    words += (words.empty() ? "" : " or ") + word;
  }
  throw InputError(flag(form), "expected " + words + ", got '" + text + "'");
}

std::string placeholder(const FlagForm& form) {
  const Field& f = *form.field;
  if (form.shape == FlagForm::Shape::Switch) return "";
  if (form.shape == FlagForm::Shape::Words) {
    std::string out;
    for (const auto& w : form.words) out += (out.empty() ? "" : "|") + w.first;
    return out;
  }
  switch (f.kind) {
    case Kind::Int: return "N";
    case Kind::Number: return "X";
    case Kind::Enum: return std::string(f.choices);
    case Kind::Bytes: return f.unit ? "SIZE" : "BYTES";
    case Kind::Size: return "GIB";
    case Kind::List:
    case Kind::Object:
    case Kind::Any: return "JSON";
    default: return "TEXT";
  }
}

std::string description(const FlagForm& form) {
  const Field& f = *form.field;
  const std::string meaning(f.meaning);
  if (form.shape == FlagForm::Shape::Switch)
    return f.kind == Kind::Bool && form.text == "true" ? meaning : std::string(f.key) + " = " + form.text + ": " + meaning;
  if (form.shape == FlagForm::Shape::Words) {
    std::string words;
    for (const auto& [word, value] : form.words) words += (words.empty() ? "" : ", ") + word + " = " + value;
    return meaning + " (" + words + ")";
  }
  std::string e = f.kind == Kind::Bytes && f.unit ? size_expectation(f) : request::expectation(f);
  if (e.rfind("expected ", 0) == 0) e = e.substr(9);
  return meaning + " (" + e + ")" + (f.required ? ", required" : "");
}

}  // namespace

std::vector<FlagForm> flag_forms(const request::Fields& fields) {
  std::vector<FlagForm> out;
  for (const auto& f : fields)
    for (std::string_view text : split(f.flags, '|')) out.push_back(form_of(f, text));
  return out;
}

std::set<std::string> value_flag_names(const std::vector<FlagForm>& forms, std::set<std::string> extra) {
  for (const auto& f : forms)
    if (f.shape != FlagForm::Shape::Switch) extra.insert(f.name);
  return extra;
}

std::set<std::string> switch_names(const std::vector<FlagForm>& forms, std::set<std::string> extra) {
  for (const auto& f : forms)
    if (f.shape == FlagForm::Shape::Switch) extra.insert(f.name);
  return extra;
}

json request_from_flags(const Args& args, const std::vector<FlagForm>& forms) {
  json req = json::object();
  std::map<std::string, const FlagForm*> first;  // field key -> the form that set it
  for (const auto& form : forms) {
    if (!given(args, form)) continue;
    const std::string key(form.field->key);
    json v = value_given(args, form);
    if (auto it = first.find(key); it != first.end()) {
      if (req[key] != v)
        throw InputError(flag(*it->second), "contradicts " + flag(form) +
                                                (form.shape == FlagForm::Shape::Switch ? "" : " " + *args.get(form.name)) +
                                                "; give one of them");
      continue;
    }
    first[key] = &form;
    req[key] = std::move(v);
  }
  return req;
}

std::string flags_help(const std::vector<FlagForm>& forms) {
  std::vector<std::string> left;
  std::size_t width = 0;
  for (const auto& form : forms) {
    const std::string p = placeholder(form);
    left.push_back(flag(form) + (p.empty() ? "" : " " + p));
    width = std::max(width, std::min<std::size_t>(left.back().size(), 26));
  }
  std::string out;
  for (std::size_t i = 0; i < forms.size(); ++i) {
    std::string l = left[i];
    if (l.size() < width) l.append(width - l.size(), ' ');
    out += "  " + l + "  " + description(forms[i]) + "\n";
  }
  return out;
}

void rethrow_as_flag(const InputError& e, const Args& args, const std::vector<FlagForm>& forms) {
  const FlagForm* named = nullptr;
  for (const auto& form : forms)
    if (form.field->key == e.field() && (!named || (given(args, form) && !given(args, *named)))) named = &form;
  if (!named) throw e;
  throw InputError(flag(*named), std::string(e.what()).substr(e.field().size() + 2));
}

}  // namespace headroom::cli
