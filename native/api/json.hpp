// The JSON of a checkpoint's metadata (docs/checkpoints.md): a small value
// type, a reader for what Python's json.dumps writes (objects, arrays,
// strings with \u escapes and surrogate pairs, integers of any size, floats,
// true/false/null) and a writer whose floats round-trip exactly (the
// shortest representation, as Python's repr). Not a general JSON library:
// what the checkpoint format needs.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace renewable_huber::detail {

struct Json;
using JsonArray = std::vector<Json>;
// Insertion order kept (the config's keys are written in parameter order).
using JsonObject = std::vector<std::pair<std::string, Json>>;

// A number keeps its text: an integer too large for int64 (a hostile
// checkpoint's 2**70) is still an integer, refused by range, not by type.
struct JsonNumber {
    std::string text;
    bool integral = false;
};

struct Json {
    std::variant<std::nullptr_t, bool, JsonNumber, std::string, std::shared_ptr<JsonArray>, std::shared_ptr<JsonObject>>
        value = nullptr;

    static Json null() { return Json{}; }
    static Json boolean(bool b) { return Json{b}; }
    static Json integer(std::int64_t v);
    static Json real(double v);  // finite only
    static Json string(std::string s) { return Json{std::move(s)}; }
    static Json array(JsonArray items) { return Json{std::make_shared<JsonArray>(std::move(items))}; }
    static Json object(JsonObject members) { return Json{std::make_shared<JsonObject>(std::move(members))}; }

    bool is_null() const { return std::holds_alternative<std::nullptr_t>(value); }
    const bool* as_bool() const { return std::get_if<bool>(&value); }
    const JsonNumber* as_number() const { return std::get_if<JsonNumber>(&value); }
    const std::string* as_string() const { return std::get_if<std::string>(&value); }
    const JsonArray* as_array() const;
    const JsonObject* as_object() const;
    // The member `key` of an object, or null when absent or not an object.
    const Json* find(const std::string& key) const;
};

// Parses `text` (one JSON value, surrounding white space allowed); throws
// std::invalid_argument on anything else.
Json parse_json(const std::string& text);
// Compact JSON (", " and ": " separators, as Python's json.dumps).
std::string write_json(const Json& value);

// A number's value: an int64 (nullopt when not integral or out of range),
// a double (nullopt when not a finite double).
std::optional<std::int64_t> json_int64(const JsonNumber& number);
std::optional<double> json_double(const JsonNumber& number);

}  // namespace renewable_huber::detail
