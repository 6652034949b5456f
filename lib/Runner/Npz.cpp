//===- Npz.cpp - NumPy .npz archives of named arrays ----------------------===//
//
// Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "distopt/Runner/Npz.h"
#include "distopt/Support/InputFile.h"
#include "distopt/Support/SafeOutput.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CRC.h"
#include "llvm/Support/FileSystem.h"

#include <zip.h>

#include <cstring>
#include <optional>
#include <set>
#include <sys/stat.h>
#include <unistd.h>

using namespace distopt::runner;
using namespace distopt;

int64_t Array::getNumElements() const {
  int64_t count = 1;
  for (int64_t size : shape)
    count *= size;
  return count;
}

Array runner::makeFloatArray(llvm::ArrayRef<float> values) {
  Array array;
  array.dtype = "<f4";
  array.shape = {int64_t(values.size())};
  array.bytes.resize(values.size() * sizeof(float));
  std::memcpy(array.bytes.data(), values.data(), array.bytes.size());
  return array;
}

int64_t runner::getElementBytes(const std::string &dtype) {
  return dtype == "<f4" || dtype == "<i4" ? 4 : 8;
}

/// The npy types dist-run moves.
static bool isSupported(const std::string &dtype) {
  return dtype == "<f4" || dtype == "<f8" || dtype == "<i4" || dtype == "<i8";
}

//===----------------------------------------------------------------------===//
// .npy
//===----------------------------------------------------------------------===//

namespace {
/// What an .npy header holds.
struct NpyHeader {
  std::string descr;
  bool fortranOrder = false;
  std::vector<int64_t> shape;
};

/// A reader of the Python literal of an .npy header, as NumPy writes it:
/// `{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }` padded
/// with spaces and a newline. Only that: a dict of those three keys with a
/// string, a bool and a tuple of non-negative ints.
class HeaderParser {
public:
  explicit HeaderParser(llvm::StringRef text) : text(text) {}

  bool parse(NpyHeader &header, std::string &problem) {
    bool hasDescr = false, hasOrder = false, hasShape = false;
    skipSpace();
    if (!consume('{'))
      return fail("the header is not a dict", problem);
    while (skipSpace(), !consume('}')) {
      std::optional<std::string> key = parseString();
      if (!key)
        return fail("expected a quoted key", problem);
      skipSpace();
      if (!consume(':'))
        return fail("expected ':' after '" + *key + "'", problem);
      skipSpace();
      if (*key == "descr" && !hasDescr) {
        std::optional<std::string> descr = parseString();
        if (!descr)
          return fail("'descr' is not a string", problem);
        header.descr = *descr;
        hasDescr = true;
      } else if (*key == "fortran_order" && !hasOrder) {
        if (text.consume_front("True"))
          header.fortranOrder = true;
        else if (text.consume_front("False"))
          header.fortranOrder = false;
        else
          return fail("'fortran_order' is not True or False", problem);
        hasOrder = true;
      } else if (*key == "shape" && !hasShape) {
        if (!parseShape(header.shape, problem))
          return false;
        hasShape = true;
      } else {
        return fail("unexpected or repeated key '" + *key + "'", problem);
      }
      skipSpace();
      if (!consume(',')) {
        skipSpace();
        if (!consume('}'))
          return fail("expected ',' or '}'", problem);
        break;
      }
    }
    skipSpace();
    if (!text.empty())
      return fail("unexpected text after the dict", problem);
    if (!hasDescr || !hasOrder || !hasShape)
      return fail("it lacks one of 'descr', 'fortran_order' and 'shape'",
                  problem);
    return true;
  }

private:
  bool fail(const std::string &what, std::string &problem) {
    problem = "malformed .npy header: " + what;
    return false;
  }
  bool notTerminated(std::string &problem) {
    return fail("the 'shape' tuple is not terminated (no ')' before the "
                "header ends)",
                problem);
  }
  void skipSpace() { text = text.ltrim(" \t\r\n"); }
  bool consume(char c) { return text.consume_front(llvm::StringRef(&c, 1)); }

  std::optional<std::string> parseString() {
    if (text.empty() || (text[0] != '\'' && text[0] != '"'))
      return std::nullopt;
    char quote = text[0];
    size_t end = text.find(quote, 1);
    if (end == llvm::StringRef::npos)
      return std::nullopt;
    llvm::StringRef value = text.slice(1, end);
    if (value.contains('\\'))
      return std::nullopt;
    text = text.drop_front(end + 1);
    return value.str();
  }

  /// A tuple of non-negative ints: `()`, `(3,)`, `(3, 4)`, `(3, 4,)`.
  bool parseShape(std::vector<int64_t> &shape, std::string &problem) {
    if (!consume('('))
      return fail("'shape' is not a tuple", problem);
    bool trailingComma = false;
    while (skipSpace(), !consume(')')) {
      if (text.empty())
        return notTerminated(problem);
      if (consume('-'))
        return fail("'shape' has a negative size", problem);
      size_t digits = 0;
      while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9')
        ++digits;
      uint64_t value = 0;
      if (digits == 0)
        return fail("'shape' holds something other than a size at '" +
                        text.take_front(8).rtrim(" \t\r\n").str() + "'",
                    problem);
      if (digits > 18 || text.take_front(digits).getAsInteger(10, value))
        return fail("'shape' holds a size of 10^18 or more", problem);
      text = text.drop_front(digits);
      shape.push_back(int64_t(value));
      skipSpace();
      trailingComma = consume(',');
      if (!trailingComma) {
        skipSpace();
        if (text.empty())
          return notTerminated(problem);
        if (!consume(')'))
          return fail("expected ',' or ')' in 'shape'", problem);
        break;
      }
    }
    // (3) is the int 3 in Python, not a tuple.
    if (shape.size() == 1 && !trailingComma)
      return fail("'shape' is not a tuple", problem);
    return true;
  }

  llvm::StringRef text;
};
} // namespace

/// The largest .npy header read (NumPy itself refuses headers over 10,000
/// bytes by default).
static constexpr uint64_t kMaxNpyHeaderBytes = 1 << 20;

static uint64_t readLittleEndian(const unsigned char *bytes, int count) {
  uint64_t value = 0;
  for (int i = count - 1; i >= 0; --i)
    value = (value << 8) | bytes[i];
  return value;
}

bool runner::parseNpyHeader(llvm::StringRef data, NpyLayout &layout,
                            std::string &problem) {
  static const char magic[] = "\x93NUMPY";
  const auto *bytes = reinterpret_cast<const unsigned char *>(data.data());
  if (data.size() < 10 || std::memcmp(data.data(), magic, 6) != 0) {
    problem = "not an .npy array (it does not start with \\x93NUMPY)";
    return false;
  }
  int major = bytes[6], minor = bytes[7];
  if (major < 1 || major > 3) {
    problem = "unknown .npy format version " + std::to_string(major) + "." +
              std::to_string(minor) + " (1.0, 2.0 and 3.0 are read)";
    return false;
  }
  // Version 1: a 2-byte header length; 2 and 3: 4 bytes.
  uint64_t lengthBytes = major == 1 ? 2 : 4;
  if (data.size() < 8 + lengthBytes) {
    problem = "the .npy header is cut short";
    return false;
  }
  uint64_t headerStart = 8 + lengthBytes;
  uint64_t headerLength = readLittleEndian(bytes + 8, lengthBytes);
  if (headerLength > data.size() - headerStart) {
    problem = "the .npy header (" + std::to_string(headerLength) +
              " bytes) runs past the end of the member (" +
              std::to_string(data.size()) + " bytes)";
    return false;
  }
  // NumPy writes a few hundred bytes; a larger header is not parsed.
  if (headerLength > kMaxNpyHeaderBytes) {
    problem = "the .npy header is " + std::to_string(headerLength) +
              " bytes, more than the " + std::to_string(kMaxNpyHeaderBytes) +
              " allowed";
    return false;
  }
  NpyHeader header;
  HeaderParser parser(data.substr(headerStart, headerLength));
  if (!parser.parse(header, problem))
    return false;
  if (header.fortranOrder) {
    problem = "stored in Fortran order; save it C-contiguous";
    return false;
  }
  if (!isSupported(header.descr)) {
    problem = "element type '" + header.descr +
              "' (float32, float64, int32 and int64 are supported)";
    return false;
  }
  // Sizes before anything is allocated: no overflow, and exactly the
  // bytes the member holds.
  uint64_t count = 1, size = 0;
  for (int64_t dim : header.shape)
    if (__builtin_mul_overflow(count, uint64_t(dim), &count)) {
      problem = "the .npy header declares more elements than fit in 64 bits";
      return false;
    }
  uint64_t itemBytes = getElementBytes(header.descr);
  uint64_t dataStart = headerStart + headerLength;
  uint64_t held = data.size() - dataStart;
  bool overflow = __builtin_mul_overflow(count, itemBytes, &size);
  if (overflow || size != held) {
    problem = "the .npy header declares " + std::to_string(count) +
              " elements (" +
              (overflow ? std::string("over 2^64") : std::to_string(size)) +
              " bytes) but the member holds " + std::to_string(held) + " bytes";
    return false;
  }
  layout.dtype = header.descr;
  layout.shape = std::move(header.shape);
  layout.dataStart = dataStart;
  return true;
}

bool runner::parseNpy(std::vector<char> &data, Array &array,
                      std::string &problem) {
  NpyLayout layout;
  if (!parseNpyHeader(llvm::StringRef(data.data(), data.size()), layout,
                      problem))
    return false;
  array.dtype = layout.dtype;
  array.shape = std::move(layout.shape);
  data.erase(data.begin(), data.begin() + layout.dataStart);
  array.bytes = std::move(data);
  return true;
}

std::string runner::writeNpy(const Array &array) {
  std::string shape = "(";
  for (int64_t size : array.shape)
    shape += std::to_string(size) + (array.shape.size() == 1 ? "," : ", ");
  if (array.shape.size() > 1)
    shape.resize(shape.size() - 2);
  shape += ")";
  std::string dict = "{'descr': '" + array.dtype +
                     "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Magic, version, length, dict, spaces and a newline: a multiple of 64
  // bytes, as NumPy aligns it.
  bool version2 = dict.size() + 1 + 10 > 65535;
  size_t prefix = version2 ? 12 : 10;
  size_t total = (prefix + dict.size() + 1 + 63) / 64 * 64;
  dict.append(total - prefix - dict.size() - 1, ' ');
  dict += '\n';
  std::string out = "\x93NUMPY";
  out += char(version2 ? 2 : 1);
  out += char(0);
  for (size_t i = 0; i < prefix - 8; ++i)
    out += char((dict.size() >> (8 * i)) & 0xff);
  out += dict;
  out.append(array.bytes.begin(), array.bytes.end());
  return out;
}

//===----------------------------------------------------------------------===//
// .npz
//===----------------------------------------------------------------------===//

/// libzip's message for `code`.
static std::string getZipMessage(int code) {
  zip_error_t zipError;
  zip_error_init_with_code(&zipError, code);
  std::string message = zip_error_strerror(&zipError);
  zip_error_fini(&zipError);
  return message;
}

/// Reads member `index` (`stat`) of `archive` (`archiveBytes` long) whole,
/// to its end (where libzip checks the CRC), and checks its size and CRC;
/// false with `problem` set.
static bool readMember(zip_t *archive, zip_int64_t index,
                       const zip_stat_t &stat, uint64_t archiveBytes,
                       std::vector<char> &data, std::string &problem) {
  if (!(stat.valid & ZIP_STAT_SIZE)) {
    problem = "the archive does not say its size";
    return false;
  }
  // Deflate expands at most ~1032 times: a larger size is a damaged
  // directory, refused before allocating it.
  if (stat.size / 1100 > archiveBytes) {
    problem = "the archive says it holds " + std::to_string(stat.size) +
              " bytes, more than its " + std::to_string(archiveBytes) +
              " bytes can hold";
    return false;
  }
  zip_file_t *file = zip_fopen_index(archive, index, 0);
  if (!file) {
    problem = std::string("cannot open it: ") + zip_strerror(archive);
    return false;
  }
  // One byte more than announced, to notice a longer member; reading on to
  // the end (a read of 0 bytes) lets libzip check the CRC.
  data.resize(stat.size + 1);
  uint64_t at = 0;
  bool ok = true;
  for (;;) {
    zip_int64_t read = zip_fread(file, data.data() + at, data.size() - at);
    if (read < 0) {
      problem = zip_error_code_zip(zip_file_get_error(file)) == ZIP_ER_CRC
                    ? "its CRC does not match its bytes (the file is damaged)"
                    : std::string("cannot read it: ") + zip_file_strerror(file);
      ok = false;
      break;
    }
    at += read;
    if (read == 0 || at == data.size())
      break;
  }
  zip_fclose(file);
  if (!ok)
    return false;
  if (at != stat.size) {
    problem = "the archive says it holds " + std::to_string(stat.size) +
              " bytes but it holds " +
              (at > stat.size ? std::string("more") : std::to_string(at));
    return false;
  }
  data.resize(at);
  if (stat.valid & ZIP_STAT_CRC) {
    uint32_t crc = llvm::crc32(llvm::ArrayRef<uint8_t>(
        reinterpret_cast<const uint8_t *>(data.data()), data.size()));
    if (crc != stat.crc) {
      problem = "its CRC does not match its bytes (the file is damaged)";
      return false;
    }
  }
  return true;
}

/// The first member name `path` holds twice, or empty (libzip refuses such
/// an archive when checking it, without naming the member).
static std::string findDuplicateMember(const std::string &path) {
  int code = 0;
  zip_t *archive = zip_open(path.c_str(), ZIP_RDONLY, &code);
  if (!archive)
    return "";
  std::set<std::string> names;
  std::string duplicate;
  for (zip_int64_t i = 0, e = zip_get_num_entries(archive, 0);
       i < e && duplicate.empty(); ++i)
    if (const char *name = zip_get_name(archive, i, ZIP_FL_ENC_RAW))
      if (!names.insert(name).second)
        duplicate = name;
  zip_discard(archive);
  return duplicate;
}

bool runner::readNpz(const std::string &path, Arrays &arrays,
                     std::string &error) {
  // Only a regular file: a FIFO or a directory is refused, never waited on.
  llvm::Expected<int> fd = openRegularFile(path, "an .npz file");
  if (!fd) {
    error = llvm::toString(fd.takeError());
    return false;
  }
  struct stat status;
  uint64_t archiveBytes = ::fstat(*fd, &status) == 0 ? status.st_size : 0;
  int code = 0;
  zip_t *archive = zip_fdopen(*fd, ZIP_CHECKCONS, &code);
  if (!archive) {
    ::close(*fd);
    std::string duplicate =
        code == ZIP_ER_EXISTS ? findDuplicateMember(path) : "";
    error = duplicate.empty()
                ? "cannot read '" + path + "': " + getZipMessage(code)
                : "'" + path + "' member '" + duplicate +
                      "' is a duplicate: the archive holds two members of "
                      "that name";
    return false;
  }
  zip_int64_t entries = zip_get_num_entries(archive, 0);
  bool ok = true;
  for (zip_int64_t i = 0; i < entries && ok; ++i) {
    zip_stat_t stat;
    if (zip_stat_index(archive, i, 0, &stat) != 0 ||
        !(stat.valid & ZIP_STAT_NAME)) {
      error = "cannot read '" + path + "': member #" + std::to_string(i) +
              ": " + zip_strerror(archive);
      ok = false;
      break;
    }
    std::string name = stat.name;
    llvm::StringRef key(name);
    if (!key.consume_back(".npy"))
      continue;
    std::string problem;
    std::vector<char> data;
    if (arrays.count(key.str()))
      problem = "a second array named '" + key.str() + "'";
    else if (readMember(archive, i, stat, archiveBytes, data, problem))
      parseNpy(data, arrays[key.str()], problem);
    if (!problem.empty()) {
      arrays.erase(key.str());
      error = "'" + path + "' member '" + name + "': " + problem;
      ok = false;
    }
  }
  zip_discard(archive);
  return ok;
}

/// The archive of `arrays` in memory (stored members, as numpy.savez
/// writes them); false with `error` set.
static bool buildArchive(const Arrays &arrays, std::string &archiveBytes,
                         std::string &error) {
  zip_error_t zipError;
  zip_error_init(&zipError);
  zip_source_t *buffer = zip_source_buffer_create(nullptr, 0, 0, &zipError);
  zip_t *archive =
      buffer ? zip_open_from_source(buffer, ZIP_TRUNCATE, &zipError) : nullptr;
  if (!archive) {
    error = std::string("cannot build the archive: ") +
            zip_error_strerror(&zipError);
    zip_error_fini(&zipError);
    if (buffer)
      zip_source_free(buffer);
    return false;
  }
  zip_error_fini(&zipError);
  zip_source_keep(buffer);
  // The members' bytes must live until zip_close.
  std::vector<std::string> members;
  members.reserve(arrays.size());
  bool ok = true;
  for (const auto &[name, array] : arrays) {
    members.push_back(writeNpy(array));
    zip_source_t *source = zip_source_buffer(archive, members.back().data(),
                                             members.back().size(), 0);
    zip_int64_t index = source ? zip_file_add(archive, (name + ".npy").c_str(),
                                              source, ZIP_FL_OVERWRITE)
                               : -1;
    if (index < 0 ||
        zip_set_file_compression(archive, index, ZIP_CM_STORE, 0) != 0) {
      if (source && index < 0)
        zip_source_free(source);
      error = "cannot add '" + name + "': " + zip_strerror(archive);
      ok = false;
      break;
    }
  }
  if (!ok) {
    zip_discard(archive);
  } else if (zip_close(archive) != 0) {
    error = std::string("cannot build the archive: ") + zip_strerror(archive);
    zip_discard(archive);
    ok = false;
  }
  zip_stat_t stat;
  if (ok &&
      (zip_source_stat(buffer, &stat) != 0 || zip_source_open(buffer) != 0)) {
    error = "cannot build the archive";
    ok = false;
  } else if (ok) {
    archiveBytes.resize(stat.size);
    ok = zip_source_read(buffer, archiveBytes.data(), stat.size) ==
         zip_int64_t(stat.size);
    zip_source_close(buffer);
    if (!ok)
      error = "cannot build the archive";
  }
  zip_source_free(buffer);
  return ok;
}

bool runner::writeNpz(const std::string &path, const Arrays &arrays,
                      std::string &error,
                      llvm::function_ref<void()> beforeRename) {
  std::string archive;
  if (!buildArchive(arrays, archive, error)) {
    error = "cannot write '" + path + "': " + error;
    return false;
  }
  PartialFile file;
  bool ok = file.create(path, error) &&
            file.write(archive.data(), archive.size(), error);
  if (ok && beforeRename)
    beforeRename();
  if (ok && file.commit(error))
    return true;
  error = "cannot write '" + path + "': " + error;
  return false;
}
