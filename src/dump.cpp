#include "dump.h"

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <fmt/format.h>

#include "backend/cpu/numeric.h"

namespace fb {

namespace {

const char* npy_descr(Dtype t) {
  switch (t) {
    case Dtype::fp64: return "<f8";
    case Dtype::fp16: return "<f2";
    case Dtype::fp32:
    case Dtype::bf16:
    case Dtype::fp8: return "<f4";  // e4m3 values (dequantised) and bf16 are exact in float
  }
  return "<f8";
}

template <typename T> void put(std::ofstream& out, T v) { out.write(reinterpret_cast<const char*>(&v), sizeof v); }

}  // namespace

void write_npy(const std::string& path, const HostTensor& t) {
  std::string shape = "(";
  for (std::int64_t s : t.shape) shape += fmt::format("{}, ", s);
  if (t.shape.size() > 1) shape.resize(shape.size() - 2);  // (a, b); a 1-D shape keeps "(n,)"
  else if (t.shape.size() == 1) shape.resize(shape.size() - 1);
  shape += ")";
  std::string header =
      fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}", npy_descr(t.dtype), shape);
  // Magic (6) + version (2) + header length (2) + header, padded with spaces to a multiple of 64,
  // ending in a newline.
  const std::size_t unpadded = 10 + header.size() + 1;
  header += std::string((64 - unpadded % 64) % 64, ' ') + "\n";

  std::ofstream out(path, std::ios::binary);
  if (!out) throw std::runtime_error(fmt::format("--dump: cannot write {}", path));
  out.write("\x93NUMPY\x01\x00", 8);
  put(out, static_cast<std::uint16_t>(header.size()));
  out.write(header.data(), std::streamsize(header.size()));
  for (double v : t.values) {
    switch (t.dtype) {
      case Dtype::fp64: put(out, v); break;
      case Dtype::fp16: put(out, cpu::float_to_half_bits(float(v))); break;
      case Dtype::fp32:
      case Dtype::bf16:
      case Dtype::fp8: put(out, float(v)); break;
    }
  }
  if (!out) throw std::runtime_error(fmt::format("--dump: write failed: {}", path));
}

void dump_case(const std::string& dir, Backend& backend, const Case& c, const std::vector<Record>& records) {
  const std::filesystem::path folder = std::filesystem::path(dir) / c.key();
  std::filesystem::create_directories(folder);
  auto write_all = [&](const std::string& prefix, const std::vector<HostTensor>& ts) {
    for (const HostTensor& t : ts) write_npy((folder / (prefix + "." + t.name + ".npy")).string(), t);
  };
  write_all("inputs", backend.fetch("inputs"));
  bool verified = false;
  for (const Record& r : records) {
    if (r.status != Status::ok) continue;
    write_all(r.kernel, backend.fetch(r.kernel));
    verified |= r.ref_max_abs_err.has_value();
  }
  if (verified) write_all("reference", backend.fetch("reference"));
}

}  // namespace fb
