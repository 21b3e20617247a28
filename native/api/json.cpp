#include "json.hpp"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <stdexcept>
#include <system_error>

namespace renewable_huber::detail {

Json Json::integer(std::int64_t v) { return Json{JsonNumber{std::to_string(v), true}}; }

Json Json::real(double v) {
    if (!std::isfinite(v)) throw std::invalid_argument("JSON holds finite numbers only");
    char buffer[64];
    const auto result = std::to_chars(buffer, buffer + sizeof buffer, v);  // shortest round trip, as Python's repr
    std::string text(buffer, result.ptr);
    if (text.find_first_of(".eEn") == std::string::npos) text += ".0";  // a float stays a float (1.0, not 1)
    return Json{JsonNumber{text, false}};
}

const JsonArray* Json::as_array() const {
    const auto* p = std::get_if<std::shared_ptr<JsonArray>>(&value);
    return p != nullptr ? p->get() : nullptr;
}

const JsonObject* Json::as_object() const {
    const auto* p = std::get_if<std::shared_ptr<JsonObject>>(&value);
    return p != nullptr ? p->get() : nullptr;
}

const Json* Json::find(const std::string& key) const {
    const JsonObject* object = as_object();
    if (object == nullptr) return nullptr;
    for (const auto& [name, member] : *object)
        if (name == key) return &member;
    return nullptr;
}

std::optional<std::int64_t> json_int64(const JsonNumber& number) {
    if (!number.integral) return std::nullopt;
    std::int64_t value = 0;
    const char* end = number.text.data() + number.text.size();
    const auto result = std::from_chars(number.text.data(), end, value);
    if (result.ec != std::errc{} || result.ptr != end) return std::nullopt;
    return value;
}

std::optional<double> json_double(const JsonNumber& number) {
    // strtod, not from_chars: a number past the double range reads as +-inf
    // (Python's json does the same), refused by name where it is checked.
    char* end = nullptr;
    const double value = std::strtod(number.text.c_str(), &end);
    if (end != number.text.c_str() + number.text.size()) return std::nullopt;
    return value;
}

namespace {

[[noreturn]] void bad(const std::string& why) { throw std::invalid_argument("invalid JSON: " + why); }

void append_utf8(std::string& out, std::uint32_t code) {
    if (code < 0x80) {
        out += static_cast<char>(code);
    } else if (code < 0x800) {
        out += static_cast<char>(0xC0 | (code >> 6));
        out += static_cast<char>(0x80 | (code & 0x3F));
    } else if (code < 0x10000) {
        out += static_cast<char>(0xE0 | (code >> 12));
        out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (code & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (code >> 18));
        out += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (code & 0x3F));
    }
}

class Reader {
public:
    explicit Reader(const std::string& text) : text_(text) {}

    Json document() {
        Json value = parse(0);
        skip_space();
        if (at_ != text_.size()) bad("trailing characters");
        return value;
    }

private:
    static constexpr int kMaxDepth = 64;

    void skip_space() {
        while (at_ < text_.size() && (text_[at_] == ' ' || text_[at_] == '\t' || text_[at_] == '\n' || text_[at_] == '\r'))
            ++at_;
    }
    char peek() {
        skip_space();
        if (at_ >= text_.size()) bad("unexpected end");
        return text_[at_];
    }
    void expect(const char* word) {
        for (const char* c = word; *c != '\0'; ++c, ++at_)
            if (at_ >= text_.size() || text_[at_] != *c) bad(std::string("expected ") + word);
    }

    Json parse(int depth) {
        if (depth > kMaxDepth) bad("nested too deeply");
        const char c = peek();
        if (c == '{') return object(depth);
        if (c == '[') return array(depth);
        if (c == '"') return Json::string(string());
        if (c == 't') return expect("true"), Json::boolean(true);
        if (c == 'f') return expect("false"), Json::boolean(false);
        if (c == 'n') return expect("null"), Json::null();
        return number();
    }

    Json object(int depth) {
        ++at_;
        JsonObject members;
        if (peek() == '}') return ++at_, Json::object(std::move(members));
        for (;;) {
            if (peek() != '"') bad("expected a key");
            std::string key = string();
            if (peek() != ':') bad("expected ':'");
            ++at_;
            members.emplace_back(std::move(key), parse(depth + 1));
            const char next = peek();
            ++at_;
            if (next == '}') return Json::object(std::move(members));
            if (next != ',') bad("expected ',' or '}'");
        }
    }

    Json array(int depth) {
        ++at_;
        JsonArray items;
        if (peek() == ']') return ++at_, Json::array(std::move(items));
        for (;;) {
            items.push_back(parse(depth + 1));
            const char next = peek();
            ++at_;
            if (next == ']') return Json::array(std::move(items));
            if (next != ',') bad("expected ',' or ']'");
        }
    }

    std::uint32_t hex4() {
        if (at_ + 4 > text_.size()) bad("short \\u escape");
        std::uint32_t code = 0;
        for (int k = 0; k < 4; ++k) {
            const char h = text_[at_++];
            code <<= 4;
            if (h >= '0' && h <= '9') code |= static_cast<std::uint32_t>(h - '0');
            else if (h >= 'a' && h <= 'f') code |= static_cast<std::uint32_t>(h - 'a' + 10);
            else if (h >= 'A' && h <= 'F') code |= static_cast<std::uint32_t>(h - 'A' + 10);
            else bad("bad \\u escape");
        }
        return code;
    }

    std::string string() {
        ++at_;  // the opening quote
        std::string out;
        for (;;) {
            if (at_ >= text_.size()) bad("unterminated string");
            const char c = text_[at_++];
            if (c == '"') return out;
            if (static_cast<unsigned char>(c) < 0x20) bad("control character in a string");
            if (c != '\\') {
                out += c;
                continue;
            }
            if (at_ >= text_.size()) bad("unterminated escape");
            const char e = text_[at_++];
            switch (e) {
                case '"': out += '"'; break;
                case '\\': out += '\\'; break;
                case '/': out += '/'; break;
                case 'b': out += '\b'; break;
                case 'f': out += '\f'; break;
                case 'n': out += '\n'; break;
                case 'r': out += '\r'; break;
                case 't': out += '\t'; break;
                case 'u': {
                    std::uint32_t code = hex4();
                    if (code >= 0xD800 && code < 0xDC00) {  // a surrogate pair
                        if (at_ + 2 > text_.size() || text_[at_] != '\\' || text_[at_ + 1] != 'u')
                            bad("lone surrogate");
                        at_ += 2;
                        const std::uint32_t low = hex4();
                        if (low < 0xDC00 || low >= 0xE000) bad("bad surrogate pair");
                        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
                    } else if (code >= 0xDC00 && code < 0xE000) {
                        bad("lone surrogate");
                    }
                    append_utf8(out, code);
                    break;
                }
                default: bad("bad escape");
            }
        }
    }

    Json number() {
        const std::size_t start = at_;
        if (at_ < text_.size() && text_[at_] == '-') ++at_;
        const std::size_t digits = at_;
        while (at_ < text_.size() && text_[at_] >= '0' && text_[at_] <= '9') ++at_;
        if (at_ == digits) bad("expected a value");
        bool integral = true;
        if (at_ < text_.size() && text_[at_] == '.') {
            integral = false;
            ++at_;
            const std::size_t fraction = at_;
            while (at_ < text_.size() && text_[at_] >= '0' && text_[at_] <= '9') ++at_;
            if (at_ == fraction) bad("bad number");
        }
        if (at_ < text_.size() && (text_[at_] == 'e' || text_[at_] == 'E')) {
            integral = false;
            ++at_;
            if (at_ < text_.size() && (text_[at_] == '+' || text_[at_] == '-')) ++at_;
            const std::size_t exponent = at_;
            while (at_ < text_.size() && text_[at_] >= '0' && text_[at_] <= '9') ++at_;
            if (at_ == exponent) bad("bad number");
        }
        return Json{JsonNumber{text_.substr(start, at_ - start), integral}};
    }

    const std::string& text_;
    std::size_t at_ = 0;
};

void write_string(std::string& out, const std::string& s) {
    // ASCII out, as Python's json.dumps(ensure_ascii=True): non-ASCII as \u escapes.
    out += '"';
    for (std::size_t i = 0; i < s.size();) {
        const auto c = static_cast<unsigned char>(s[i]);
        std::uint32_t code = c;
        std::size_t length = 1;
        if (c >= 0x80) {
            length = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
            code = c & (0x3F >> (length - 1));
            for (std::size_t k = 1; k < length && i + k < s.size(); ++k)
                code = (code << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
        }
        i += length;
        auto escape = [&out](std::uint32_t unit) {
            static const char* hex = "0123456789abcdef";
            out += "\\u";
            for (int shift = 12; shift >= 0; shift -= 4) out += hex[(unit >> shift) & 0xF];
        };
        if (code == '"') out += "\\\"";
        else if (code == '\\') out += "\\\\";
        else if (code == '\n') out += "\\n";
        else if (code == '\r') out += "\\r";
        else if (code == '\t') out += "\\t";
        else if (code == '\b') out += "\\b";
        else if (code == '\f') out += "\\f";
        else if (code < 0x20 || (code >= 0x7F && code < 0x10000)) escape(code);
        else if (code >= 0x10000) {
            const std::uint32_t v = code - 0x10000;
            escape(0xD800 + (v >> 10));
            escape(0xDC00 + (v & 0x3FF));
        } else out += static_cast<char>(code);
    }
    out += '"';
}

void write(std::string& out, const Json& value) {
    if (value.is_null()) out += "null";
    else if (const bool* b = value.as_bool()) out += *b ? "true" : "false";
    else if (const JsonNumber* n = value.as_number()) out += n->text;
    else if (const std::string* s = value.as_string()) write_string(out, *s);
    else if (const JsonArray* a = value.as_array()) {
        out += '[';
        for (std::size_t k = 0; k < a->size(); ++k) {
            if (k > 0) out += ", ";
            write(out, (*a)[k]);
        }
        out += ']';
    } else if (const JsonObject* o = value.as_object()) {
        out += '{';
        for (std::size_t k = 0; k < o->size(); ++k) {
            if (k > 0) out += ", ";
            write_string(out, (*o)[k].first);
            out += ": ";
            write(out, (*o)[k].second);
        }
        out += '}';
    }
}

}  // namespace

Json parse_json(const std::string& text) { return Reader(text).document(); }

std::string write_json(const Json& value) {
    std::string out;
    write(out, value);
    return out;
}

}  // namespace renewable_huber::detail
