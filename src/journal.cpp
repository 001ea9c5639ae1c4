#include "journal.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include <fmt/format.h>

namespace fb {

namespace {

// FNV-1a: stable across builds and platforms, unlike std::hash.
std::uint64_t fnv1a(const std::string& s) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : s) {
    h ^= ch;
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace

std::string sweep_fingerprint(const nlohmann::json& spec, const std::string& backend,
                              const std::string& shard) {
  return fmt::format("{:016x}", fnv1a(spec.dump() + "|" + backend + "|" + shard));
}

Journal::Journal(const std::string& path, const std::string& fingerprint, bool append) : path_(path) {
  file_ = std::fopen(path.c_str(), append ? "a" : "w");
  if (!file_)
    throw std::runtime_error(fmt::format("journal {}: cannot open: {}", path, std::strerror(errno)));
  if (!append) {
    const std::string header = nlohmann::json{{"journal", 1}, {"fingerprint", fingerprint}}.dump() + "\n";
    std::fputs(header.c_str(), file_);
    std::fflush(file_);
  }
}

Journal::~Journal() {
  if (file_) std::fclose(file_);
}

void Journal::append(const std::vector<Record>& records) {
  for (const Record& r : records) {
    const std::string line = to_json(r).dump() + "\n";
    if (std::fputs(line.c_str(), file_) < 0)
      throw std::runtime_error(fmt::format("journal {}: write failed: {}", path_, std::strerror(errno)));
  }
  if (std::fflush(file_) != 0 || ::fsync(::fileno(file_)) != 0)
    throw std::runtime_error(fmt::format("journal {}: flush failed: {}", path_, std::strerror(errno)));
}

JournalContents read_journal(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(fmt::format("journal {}: cannot read", path));
  JournalContents out;
  std::string line;
  std::size_t n = 0;
  std::vector<std::string> lines;
  while (std::getline(in, line)) lines.push_back(line);
  for (const std::string& l : lines) {
    ++n;
    const bool last = n == lines.size();
    nlohmann::json j = nlohmann::json::parse(l, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) {
      if (last) break;  // torn final line: the case it belonged to is simply run again
      throw std::runtime_error(fmt::format("journal {}: line {} is not JSON", path, n));
    }
    if (n == 1) {
      if (!j.is_object() || !j.contains("fingerprint") || !j["fingerprint"].is_string())
        throw std::runtime_error(fmt::format("journal {}: line 1 is not a journal header", path));
      out.fingerprint = j["fingerprint"].get<std::string>();
      continue;
    }
    try {
      out.records.push_back(record_from_json(j));
    } catch (const std::exception& e) {
      if (last) break;
      throw std::runtime_error(fmt::format("journal {}: line {}: {}", path, n, e.what()));
    }
  }
  if (n == 0) throw std::runtime_error(fmt::format("journal {}: empty", path));
  return out;
}

std::optional<Shard> parse_shard(const std::string& s) {
  const auto slash = s.find('/');
  if (slash == std::string::npos) return std::nullopt;
  try {
    std::size_t used = 0;
    const int i = std::stoi(s.substr(0, slash), &used);
    if (used != slash) return std::nullopt;
    const std::string rest = s.substr(slash + 1);
    const int n = std::stoi(rest, &used);
    if (used != rest.size() || n < 1 || i < 0 || i >= n) return std::nullopt;
    return Shard{i, n};
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::vector<Case> shard_cases(const std::vector<Case>& cases, Shard shard) {
  std::vector<Case> out;
  for (std::size_t i = 0; i < cases.size(); ++i)
    if (int(i % std::size_t(shard.count)) == shard.index) out.push_back(cases[i]);
  return out;
}

}  // namespace fb
