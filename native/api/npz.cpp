#include "npz.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <system_error>

namespace renewable_huber::detail {

namespace {

// No checkpoint entry comes near this: a larger one is refused (a zip bomb).
constexpr std::uint64_t kMaxEntryBytes = std::uint64_t{1} << 32;

[[noreturn]] void corrupt(const std::string& why) { throw std::runtime_error("not a valid npz archive: " + why); }

std::uint64_t le(const std::string& s, std::size_t at, int bytes) {
    if (at + static_cast<std::size_t>(bytes) > s.size()) corrupt("truncated");
    std::uint64_t v = 0;
    for (int k = bytes - 1; k >= 0; --k) v = (v << 8) | static_cast<unsigned char>(s[at + static_cast<std::size_t>(k)]);
    return v;
}

void put(std::string& s, std::uint64_t v, int bytes) {
    for (int k = 0; k < bytes; ++k) s += static_cast<char>((v >> (8 * k)) & 0xFF);
}

std::string inflate_raw(const std::string& compressed, std::uint64_t size) {
    if (size > kMaxEntryBytes) corrupt("entry too large");
    std::string out(size, '\0');
    z_stream z{};
    if (inflateInit2(&z, -15) != Z_OK) corrupt("zlib");
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data()));
    z.avail_in = static_cast<uInt>(compressed.size());
    z.next_out = reinterpret_cast<Bytef*>(out.data());
    z.avail_out = static_cast<uInt>(out.size());
    const int status = inflate(&z, Z_FINISH);
    const bool ok = status == Z_STREAM_END && z.total_out == size;
    inflateEnd(&z);
    if (!ok) corrupt("bad DEFLATE data");
    return out;
}

std::string deflate_raw(const std::string& data) {
    z_stream z{};
    if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        throw std::runtime_error("zlib could not start");
    std::string out(deflateBound(&z, static_cast<uLong>(data.size())), '\0');
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
    z.avail_in = static_cast<uInt>(data.size());
    z.next_out = reinterpret_cast<Bytef*>(out.data());
    z.avail_out = static_cast<uInt>(out.size());
    const int status = deflate(&z, Z_FINISH);
    out.resize(z.total_out);
    deflateEnd(&z);
    if (status != Z_STREAM_END) throw std::runtime_error("zlib could not compress");
    return out;
}

std::uint32_t crc(const std::string& data) {
    return static_cast<std::uint32_t>(
        crc32(0L, reinterpret_cast<const Bytef*>(data.data()), static_cast<uInt>(data.size())));
}

// ---------------------------------------------------------------- .npy
std::size_t item_size(const std::string& descr) {
    if (descr.size() < 3) corrupt("bad dtype " + descr);
    const char kind = descr[1];
    const long count = std::strtol(descr.c_str() + 2, nullptr, 10);
    if (kind == 'f' && (count == 4 || count == 8)) return static_cast<std::size_t>(count);
    if (kind == 'U' && count > 0 && count < (1 << 24)) return static_cast<std::size_t>(count) * 4;
    corrupt("unsupported dtype " + descr);
}

// The value of `key` in the header's Python dict literal.
std::string header_field(const std::string& header, const std::string& key) {
    const std::string quoted = "'" + key + "':";
    const std::size_t at = header.find(quoted);
    if (at == std::string::npos) corrupt("npy header lacks " + key);
    std::size_t start = at + quoted.size();
    while (start < header.size() && header[start] == ' ') ++start;
    std::size_t end = start;
    if (start < header.size() && header[start] == '(') {
        end = header.find(')', start);
        if (end == std::string::npos) corrupt("bad shape");
        return header.substr(start, end - start + 1);
    }
    if (start < header.size() && header[start] == '\'') {
        end = header.find('\'', start + 1);
        if (end == std::string::npos) corrupt("bad descr");
        return header.substr(start + 1, end - start - 1);
    }
    while (end < header.size() && header[end] != ',' && header[end] != '}') ++end;
    return header.substr(start, end - start);
}

NpyArray parse_npy(const std::string& file) {
    if (file.size() < 10 || file.compare(0, 6, "\x93NUMPY") != 0) corrupt("not an npy array");
    const int major = static_cast<unsigned char>(file[6]);
    std::size_t header_length = 0, offset = 0;
    if (major == 1) {
        header_length = le(file, 8, 2);
        offset = 10;
    } else if (major == 2 || major == 3) {
        header_length = le(file, 8, 4);
        offset = 12;
    } else {
        corrupt("npy version");
    }
    if (offset + header_length > file.size()) corrupt("truncated npy header");
    const std::string header = file.substr(offset, header_length);
    NpyArray array;
    array.descr = header_field(header, "descr");
    const std::string order = header_field(header, "fortran_order");
    if (order != "False" && order != "True") corrupt("fortran_order");
    const std::string shape = header_field(header, "shape");
    for (std::size_t at = 1; at < shape.size();) {
        while (at < shape.size() && (shape[at] == ' ' || shape[at] == ',')) ++at;
        if (at >= shape.size() || shape[at] == ')') break;
        char* end = nullptr;
        const long long extent = std::strtoll(shape.c_str() + at, &end, 10);
        if (end == shape.c_str() + at || extent < 0 || extent > (std::int64_t{1} << 31)) corrupt("bad shape");
        array.shape.push_back(extent);
        at = static_cast<std::size_t>(end - shape.c_str());
    }
    const std::size_t item = item_size(array.descr);
    std::uint64_t count = 1;
    for (const std::int64_t extent : array.shape) {
        count *= static_cast<std::uint64_t>(extent);
        if (count > kMaxEntryBytes) corrupt("array too large");
    }
    if (file.size() - offset - header_length != count * item) corrupt("data size does not match the shape");
    array.bytes = file.substr(offset + header_length);
    if (order == "True" && array.shape.size() == 2 && array.shape[0] > 1 && array.shape[1] > 1) {
        // Column-major on disk: stored here in C order, as NumPy's view of it reads.
        const auto rows = static_cast<std::size_t>(array.shape[0]), cols = static_cast<std::size_t>(array.shape[1]);
        std::string c_order(array.bytes.size(), '\0');
        for (std::size_t i = 0; i < rows; ++i)
            for (std::size_t j = 0; j < cols; ++j)
                std::memcpy(&c_order[(i * cols + j) * item], &array.bytes[(j * rows + i) * item], item);
        array.bytes.swap(c_order);
    }
    return array;
}

std::string npy_file(const NpyArray& array) {
    std::string shape = "(";
    for (std::size_t k = 0; k < array.shape.size(); ++k) shape += (k > 0 ? ", " : "") + std::to_string(array.shape[k]);
    shape += array.shape.size() == 1 ? ",)" : ")";  // (), (4,), (4, 4): NumPy's tuples
    std::string header = "{'descr': '" + array.descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
    // Padded with spaces so the data starts on a 64-byte boundary, ending in '\n'.
    const std::size_t total = 10 + header.size() + 1;
    header.append((64 - total % 64) % 64, ' ');
    header += '\n';
    std::string file = "\x93NUMPY";
    file += '\x01';
    file += '\x00';
    put(file, header.size(), 2);
    return file + header + array.bytes;
}

bool little_endian_host() {
    const std::uint16_t probe = 1;
    unsigned char first;
    std::memcpy(&first, &probe, 1);
    return first == 1;
}

}  // namespace

// ---------------------------------------------------------------- the archive
std::map<std::string, NpyArray> read_npz(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::system_error(errno, std::generic_category(), path);
    const std::string zip((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    // The end of central directory record, within the last 64 KiB + 22 bytes.
    if (zip.size() < 22) corrupt("too short");
    std::size_t eocd = std::string::npos;
    for (std::size_t at = zip.size() - 22 + 1; at-- > 0 && zip.size() - at <= 65535 + 22;) {
        if (le(zip, at, 4) == 0x06054b50) {
            eocd = at;
            break;
        }
    }
    if (eocd == std::string::npos) corrupt("no end of central directory");
    std::uint64_t entries = le(zip, eocd + 10, 2), directory = le(zip, eocd + 16, 4);
    if ((entries == 0xFFFF || directory == 0xFFFFFFFF) && eocd >= 20 && le(zip, eocd - 20, 4) == 0x07064b50) {
        const std::uint64_t record = le(zip, eocd - 20 + 8, 8);
        if (record + 56 > zip.size() || le(zip, record, 4) != 0x06064b50) corrupt("bad zip64 record");
        entries = le(zip, record + 32, 8);
        directory = le(zip, record + 48, 8);
    }
    if (entries > 64) corrupt("too many entries");
    std::map<std::string, NpyArray> arrays;
    std::size_t at = directory;
    for (std::uint64_t k = 0; k < entries; ++k) {
        if (le(zip, at, 4) != 0x02014b50) corrupt("bad central directory");
        const std::uint64_t method = le(zip, at + 10, 2), checksum = le(zip, at + 16, 4);
        std::uint64_t compressed = le(zip, at + 20, 4), size = le(zip, at + 24, 4);
        const std::size_t name_length = le(zip, at + 28, 2), extra_length = le(zip, at + 30, 2),
                          comment_length = le(zip, at + 32, 2);
        std::uint64_t local = le(zip, at + 42, 4);
        if (at + 46 + name_length + extra_length > zip.size()) corrupt("truncated central directory");
        std::string name = zip.substr(at + 46, name_length);
        // zip64: the 8-byte fields that overflowed, in this order.
        for (std::size_t e = at + 46 + name_length; e + 4 <= at + 46 + name_length + extra_length;) {
            const std::uint64_t id = le(zip, e, 2), length = le(zip, e + 2, 2);
            std::size_t field = e + 4;
            if (id == 0x0001) {
                if (size == 0xFFFFFFFF) size = le(zip, field, 8), field += 8;
                if (compressed == 0xFFFFFFFF) compressed = le(zip, field, 8), field += 8;
                if (local == 0xFFFFFFFF) local = le(zip, field, 8);
            }
            e += 4 + length;
        }
        at += 46 + name_length + extra_length + comment_length;
        if (le(zip, local, 4) != 0x04034b50) corrupt("bad local header");
        const std::size_t data = local + 30 + le(zip, local + 26, 2) + le(zip, local + 28, 2);
        if (compressed > zip.size() || data > zip.size() - compressed) corrupt("entry outside the archive");
        const std::string stored = zip.substr(data, compressed);
        std::string file;
        if (method == 0) {
            if (compressed != size) corrupt("stored entry sizes differ");
            file = stored;
        } else if (method == 8) {
            file = inflate_raw(stored, size);
        } else {
            corrupt("unsupported compression");
        }
        if (crc(file) != checksum) corrupt("CRC mismatch");
        if (name.size() < 4 || name.compare(name.size() - 4, 4, ".npy") != 0) corrupt("not an npy entry: " + name);
        name.resize(name.size() - 4);
        if (arrays.count(name) != 0) corrupt("duplicate entry " + name);
        arrays.emplace(name, parse_npy(file));
    }
    return arrays;
}

void write_npz(const std::string& path, const std::vector<std::pair<std::string, NpyArray>>& arrays) {
    std::string zip, directory;
    for (const auto& [name, array] : arrays) {
        const std::string file = npy_file(array), compressed = deflate_raw(file), entry = name + ".npy";
        const std::uint32_t checksum = crc(file);
        if (zip.size() + compressed.size() > 0xFFFFFFF0u) throw std::runtime_error("checkpoint too large");
        const std::uint64_t local = zip.size();
        auto header = [&](std::string& out, bool central) {
            put(out, central ? 0x02014b50 : 0x04034b50, 4);
            if (central) put(out, 20, 2);  // version made by
            put(out, 20, 2);               // version needed
            put(out, 0, 2);                // flags
            put(out, 8, 2);                // DEFLATE
            put(out, 0, 2);                // time 00:00
            put(out, (0 << 9) | (1 << 5) | 1, 2);  // date 1980-01-01: the same bytes for the same state
            put(out, checksum, 4);
            put(out, compressed.size(), 4);
            put(out, file.size(), 4);
            put(out, entry.size(), 2);
            put(out, 0, 2);  // extra
            if (central) {
                put(out, 0, 2);  // comment
                put(out, 0, 2);  // disk
                put(out, 0, 2);  // internal attributes
                put(out, 0, 4);  // external attributes
                put(out, local, 4);
            }
            out += entry;
        };
        header(zip, false);
        zip += compressed;
        header(directory, true);
    }
    const std::uint64_t directory_offset = zip.size();
    zip += directory;
    put(zip, 0x06054b50, 4);
    put(zip, 0, 2);
    put(zip, 0, 2);
    put(zip, arrays.size(), 2);
    put(zip, arrays.size(), 2);
    put(zip, directory.size(), 4);
    put(zip, directory_offset, 4);
    put(zip, 0, 2);

    namespace fs = std::filesystem;
    const fs::path target(path);
    const fs::path folder = target.parent_path().empty() ? fs::path(".") : target.parent_path();
    fs::create_directories(folder);
    std::string temporary = (folder / ("." + target.filename().string() + ".XXXXXX.tmp")).string();
    const int descriptor = mkstemps(temporary.data(), 4);
    if (descriptor < 0) throw std::system_error(errno, std::generic_category(), path);
    auto fail = [&](int error) {
        ::close(descriptor);
        ::unlink(temporary.c_str());
        throw std::system_error(error, std::generic_category(), path);
    };
    for (std::size_t written = 0; written < zip.size();) {
        const ssize_t n = ::write(descriptor, zip.data() + written, zip.size() - written);
        if (n < 0) {
            if (errno == EINTR) continue;
            fail(errno);
        }
        written += static_cast<std::size_t>(n);
    }
    if (::fsync(descriptor) != 0) fail(errno);
    if (::fchmod(descriptor, 0644) != 0) fail(errno);
    if (::close(descriptor) != 0) {
        const int error = errno;
        ::unlink(temporary.c_str());
        throw std::system_error(error, std::generic_category(), path);
    }
    if (::rename(temporary.c_str(), path.c_str()) != 0) {
        const int error = errno;
        ::unlink(temporary.c_str());
        throw std::system_error(error, std::generic_category(), path);
    }
    const int directory_descriptor = ::open(folder.c_str(), O_RDONLY);
    if (directory_descriptor >= 0) {  // the rename made durable where the platform allows it
        ::fsync(directory_descriptor);
        ::close(directory_descriptor);
    }
}

// ---------------------------------------------------------------- values
bool npy_is_float(const NpyArray& array) {
    return array.descr.size() >= 3 && (array.descr[0] == '<' || array.descr[0] == '>' || array.descr[0] == '=') &&
           array.descr[1] == 'f' && (array.descr.substr(2) == "4" || array.descr.substr(2) == "8");
}

template <class T>
std::vector<T> npy_values(const NpyArray& array) {
    if (!npy_is_float(array)) corrupt("not a float array");
    const bool wide = array.descr[2] == '8';
    const bool swap = (array.descr[0] == '>') == little_endian_host();
    const std::size_t item = wide ? 8 : 4, count = array.bytes.size() / item;
    std::vector<T> values(count);
    for (std::size_t k = 0; k < count; ++k) {
        char raw[8];
        std::memcpy(raw, array.bytes.data() + k * item, item);
        if (swap) std::reverse(raw, raw + item);
        if (wide) {
            double v;
            std::memcpy(&v, raw, 8);
            values[k] = static_cast<T>(v);
        } else {
            float v;
            std::memcpy(&v, raw, 4);
            values[k] = static_cast<T>(v);
        }
    }
    return values;
}

template <class T>
NpyArray npy_array(const std::vector<T>& values, std::vector<std::int64_t> shape) {
    static_assert(sizeof(T) == 4 || sizeof(T) == 8);
    if (!little_endian_host()) throw std::runtime_error("checkpoints are written on little-endian hosts only");
    NpyArray array{sizeof(T) == 8 ? "<f8" : "<f4", std::move(shape), std::string(values.size() * sizeof(T), '\0')};
    std::memcpy(array.bytes.data(), values.data(), array.bytes.size());
    return array;
}

NpyArray npy_unicode_scalar(const std::string& utf8) {
    std::u32string text;
    for (std::size_t i = 0; i < utf8.size();) {
        const auto c = static_cast<unsigned char>(utf8[i]);
        const std::size_t length = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
        char32_t code = length == 1 ? c : (c & (0x3F >> (length - 1)));
        for (std::size_t k = 1; k < length && i + k < utf8.size(); ++k)
            code = (code << 6) | (static_cast<unsigned char>(utf8[i + k]) & 0x3F);
        text += code;
        i += length;
    }
    NpyArray array{"<U" + std::to_string(std::max<std::size_t>(text.size(), 1)), {}, std::string()};
    for (const char32_t code : text) put(array.bytes, code, 4);
    if (text.empty()) put(array.bytes, 0, 4);
    return array;
}

std::string npy_unicode_text(const NpyArray& array) {
    if (array.descr.size() < 3 || array.descr[1] != 'U' || !array.shape.empty()) corrupt("not a 0-d string");
    const bool swap = (array.descr[0] == '>') == little_endian_host();
    std::string out;
    for (std::size_t at = 0; at + 4 <= array.bytes.size(); at += 4) {
        unsigned char raw[4];
        std::memcpy(raw, array.bytes.data() + at, 4);
        if (swap) std::reverse(raw, raw + 4);
        const std::uint32_t code = raw[0] | (raw[1] << 8) | (raw[2] << 16) | (static_cast<std::uint32_t>(raw[3]) << 24);
        if (code == 0) break;  // NumPy pads a shorter string with zeros
        if (code > 0x10FFFF) corrupt("bad character");
        if (code < 0x80) out += static_cast<char>(code);
        else if (code < 0x800) out += static_cast<char>(0xC0 | (code >> 6)), out += static_cast<char>(0x80 | (code & 0x3F));
        else if (code < 0x10000)
            out += static_cast<char>(0xE0 | (code >> 12)), out += static_cast<char>(0x80 | ((code >> 6) & 0x3F)),
                out += static_cast<char>(0x80 | (code & 0x3F));
        else
            out += static_cast<char>(0xF0 | (code >> 18)), out += static_cast<char>(0x80 | ((code >> 12) & 0x3F)),
                out += static_cast<char>(0x80 | ((code >> 6) & 0x3F)), out += static_cast<char>(0x80 | (code & 0x3F));
    }
    return out;
}

template std::vector<float> npy_values<float>(const NpyArray&);
template std::vector<double> npy_values<double>(const NpyArray&);
template NpyArray npy_array<float>(const std::vector<float>&, std::vector<std::int64_t>);
template NpyArray npy_array<double>(const std::vector<double>&, std::vector<std::int64_t>);

}  // namespace renewable_huber::detail
