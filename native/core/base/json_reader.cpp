#include "core/base/json_reader.hpp"

#include "core/base/error.hpp"

namespace headroom {
namespace {

using nlohmann::json;

std::string prefix(const JsonLimits& l) { return *l.what ? std::string(l.what) + ": " : std::string(); }

const char* type_text(bool object, bool array) { return object ? "an object" : array ? "an array" : "a plain value"; }

// nlohmann's own DOM builder, with a depth count and a check of the first token in front of it.
class BoundedSax {
 public:
  BoundedSax(json& root, const JsonLimits& limits, const std::string& source)
      : dom_(root, true), limits_(limits), source_(source) {}

  bool null() { return top(false, false) && dom_.null(); }
  bool boolean(bool v) { return top(false, false) && dom_.boolean(v); }
  bool number_integer(json::number_integer_t v) { return top(false, false) && dom_.number_integer(v); }
  bool number_unsigned(json::number_unsigned_t v) { return top(false, false) && dom_.number_unsigned(v); }
  bool number_float(json::number_float_t v, const json::string_t& s) { return top(false, false) && dom_.number_float(v, s); }
  bool string(json::string_t& v) { return top(false, false) && dom_.string(v); }
  bool binary(json::binary_t& v) { return top(false, false) && dom_.binary(v); }
  bool start_object(std::size_t n) { return top(true, false) && enter() && dom_.start_object(n); }
  bool key(json::string_t& k) { return dom_.key(k); }
  bool end_object() {
    --depth_;
    return dom_.end_object();
  }
  bool start_array(std::size_t n) { return top(false, true) && enter() && dom_.start_array(n); }
  bool end_array() {
    --depth_;
    return dom_.end_array();
  }
  bool parse_error(std::size_t pos, const std::string& token, const nlohmann::detail::exception& ex) {
    return dom_.parse_error(pos, token, ex);  // throws ex
  }

 private:
  nlohmann::detail::json_sax_dom_parser<json> dom_;
  const JsonLimits& limits_;
  const std::string& source_;
  int depth_ = 0;
  bool started_ = false;

  bool top(bool object, bool array) {
    if (started_) return true;
    started_ = true;
    if (limits_.object_only && !object)
      throw FileFormatError(source_, prefix(limits_) + "expected a JSON object" +
                                         (*limits_.expected ? std::string(" (") + limits_.expected + ")" : "") +
                                         ", found " + type_text(object, array));
    return true;
  }
  bool enter() {
    if (++depth_ > limits_.max_depth)
      throw FileFormatError(source_, prefix(limits_) + "JSON nests deeper than " + std::to_string(limits_.max_depth) + " levels" +
                                         (*limits_.expected ? std::string("; ") + limits_.expected : std::string()));
    return true;
  }
};

void append_string(const std::string& s, std::string& out, std::size_t room) {
  json cut = s.size() > room ? s.substr(0, room + 1) : s;
  out += cut.dump(-1, ' ', false, json::error_handler_t::replace);
}

void preview(const json& v, std::string& out, std::size_t limit) {
  if (out.size() > limit) return;
  const std::size_t room = limit - out.size();
  if (v.is_object()) {
    out += '{';
    bool first = true;
    for (auto it = v.begin(); it != v.end() && out.size() <= limit; ++it) {
      if (!first) out += ',';
      first = false;
      append_string(it.key(), out, room);
      out += ':';
      preview(it.value(), out, limit);
    }
    out += '}';
  } else if (v.is_array()) {
    out += '[';
    bool first = true;
    for (auto it = v.begin(); it != v.end() && out.size() <= limit; ++it) {
      if (!first) out += ',';
      first = false;
      preview(*it, out, limit);
    }
    out += ']';
  } else if (v.is_string()) {
    append_string(v.get_ref<const std::string&>(), out, room);
  } else if (v.is_binary()) {
    out += "<binary>";
  } else {
    out += v.dump();  // a scalar: a few characters
  }
}

}  // namespace

json read_json(const std::string& text, const std::string& source, const JsonLimits& limits) {
  json root;
  BoundedSax sax(root, limits, source);
  try {
    json::sax_parse(text, &sax);
  } catch (const json::parse_error& e) {
    std::size_t line = 1, col = 1;
    for (std::size_t i = 0; i + 1 < e.byte && i < text.size(); ++i) {
      if (text[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    throw FileFormatError(source, prefix(limits) + "not valid JSON at line " + std::to_string(line) + ", column " + std::to_string(col) +
                                      " (byte " + std::to_string(e.byte) + "): " + e.what());
  } catch (const json::exception& e) {  // out_of_range 406: a number beyond a double, such as 1e400
    throw FileFormatError(source, prefix(limits) + "not valid JSON: " + e.what() +
                                      " (numbers must be finite and within about 1.8e308)");
  }
  return root;
}

std::string text_preview(const std::string& text, std::size_t max_chars) {
  if (text.size() <= max_chars) return text;
  std::size_t cut = max_chars;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;  // keep UTF-8 whole
  return text.substr(0, cut) + "... (" + std::to_string(text.size()) + " bytes)";
}

std::string json_preview(const json& v, std::size_t max_chars) {
  if (max_chars < 4) max_chars = 4;
  std::string out;
  preview(v, out, max_chars);
  if (out.size() <= max_chars) return out;
  std::size_t cut = max_chars - 3;
  while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) --cut;  // keep UTF-8 whole
  return out.substr(0, cut) + "...";
}

std::string text_of(const nlohmann::json& object, const char* key) {
  if (!object.is_object()) return "";
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace headroom
