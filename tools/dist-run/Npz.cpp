//===- Npz.cpp - NumPy .npz archives of named arrays ----------------------===//

#include "Npz.h"

#include <xtensor/xadapt.hpp>
#include <xtensor/xnpy.hpp>
#include <zip.h>

#include <cstdio>
#include <cstring>
#include <sstream>

using namespace distrun;

int64_t Array::getNumElements() const {
  int64_t count = 1;
  for (int64_t size : shape)
    count *= size;
  return count;
}

/// The npy types dist-run moves; xtensor aborts on others, so they are
/// refused here first.
static bool isSupported(const std::string &dtype) {
  return dtype == "<f4" || dtype == "<f8" || dtype == "<i4" || dtype == "<i8";
}

/// Parses one .npy member; checks what xtensor would abort on.
static bool parseNpy(const std::string &name, const std::string &data,
                     Array &array, std::string &error) {
  if (data.size() < 10 || data.compare(0, 6, "\x93NUMPY") != 0) {
    error = "'" + name + "' is not an .npy array";
    return false;
  }
  std::istringstream stream(data);
  xt::detail::npy_file file = xt::detail::load_npy_file(stream);
  if (file.m_fortran_order) {
    error = "'" + name + "' is stored in Fortran order; save it C-contiguous";
    return false;
  }
  if (!isSupported(file.m_typestring)) {
    error = "'" + name + "' has element type '" + file.m_typestring +
            "' (float32, float64, int32 and int64 are supported)";
    return false;
  }
  array.dtype = file.m_typestring;
  array.shape.assign(file.m_shape.begin(), file.m_shape.end());
  array.bytes.assign(file.ptr(), file.ptr() + file.n_bytes());
  if (int64_t(data.size()) < int64_t(file.n_bytes())) {
    error = "'" + name + "' is truncated";
    return false;
  }
  return true;
}

bool distrun::readNpz(const std::string &path, Arrays &arrays,
                      std::string &error) {
  int code = 0;
  zip_t *archive = zip_open(path.c_str(), ZIP_RDONLY, &code);
  if (!archive) {
    zip_error_t zipError;
    zip_error_init_with_code(&zipError, code);
    error = "cannot read '" + path + "': " + zip_error_strerror(&zipError);
    zip_error_fini(&zipError);
    return false;
  }
  zip_int64_t entries = zip_get_num_entries(archive, 0);
  bool ok = true;
  for (zip_int64_t i = 0; i < entries && ok; ++i) {
    zip_stat_t stat;
    if (zip_stat_index(archive, i, 0, &stat) != 0)
      continue;
    std::string name = stat.name;
    if (name.size() < 4 || name.compare(name.size() - 4, 4, ".npy") != 0)
      continue;
    std::string data(stat.size, '\0');
    zip_file_t *file = zip_fopen_index(archive, i, 0);
    if (!file || zip_fread(file, data.data(), stat.size) !=
                     zip_int64_t(stat.size)) {
      error = "cannot read '" + name + "' in '" + path + "'";
      ok = false;
    } else {
      ok = parseNpy(name, data, arrays[name.substr(0, name.size() - 4)],
                    error);
      if (!ok)
        error = path + ": " + error;
    }
    if (file)
      zip_fclose(file);
  }
  zip_discard(archive);
  return ok;
}

/// The .npy bytes of `array`.
template <typename T>
static std::string dump(const Array &array) {
  std::vector<std::size_t> shape(array.shape.begin(), array.shape.end());
  auto view = xt::adapt(reinterpret_cast<const T *>(array.bytes.data()),
                        array.bytes.size() / sizeof(T), xt::no_ownership(),
                        shape);
  std::ostringstream stream;
  xt::detail::dump_npy_stream(stream, view);
  return stream.str();
}

bool distrun::writeNpz(const std::string &path, const Arrays &arrays,
                       std::string &error) {
  std::string staging = path + ".partial";
  std::remove(staging.c_str());
  int code = 0;
  zip_t *archive = zip_open(staging.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &code);
  if (!archive) {
    error = "cannot write '" + path + "'";
    return false;
  }
  // The members' bytes must live until zip_close.
  std::vector<std::string> members;
  members.reserve(arrays.size());
  for (const auto &[name, array] : arrays) {
    if (array.dtype == "<f4")
      members.push_back(dump<float>(array));
    else if (array.dtype == "<f8")
      members.push_back(dump<double>(array));
    else if (array.dtype == "<i4")
      members.push_back(dump<int32_t>(array));
    else
      members.push_back(dump<int64_t>(array));
    zip_source_t *source = zip_source_buffer(
        archive, members.back().data(), members.back().size(), 0);
    if (!source || zip_file_add(archive, (name + ".npy").c_str(), source,
                                ZIP_FL_OVERWRITE) < 0) {
      zip_source_free(source);
      zip_discard(archive);
      std::remove(staging.c_str());
      error = "cannot add '" + name + "' to '" + path + "'";
      return false;
    }
  }
  if (zip_close(archive) != 0) {
    zip_discard(archive);
    std::remove(staging.c_str());
    error = "cannot write '" + path + "'";
    return false;
  }
  if (std::rename(staging.c_str(), path.c_str()) != 0) {
    std::remove(staging.c_str());
    error = "cannot write '" + path + "'";
    return false;
  }
  return true;
}
