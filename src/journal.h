// Results are never lost: each finished case's records are appended to a JSON Lines journal next to
// the output as they complete, so an interrupted sweep can be resumed (`run --resume`).
#pragma once

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "record.h"
#include "spec.h"

namespace fb {

// Identifies what a journal belongs to: the spec as given, the backend and the shard. A journal of
// another sweep is never mixed in.
std::string sweep_fingerprint(const nlohmann::json& spec, const std::string& backend,
                              const std::string& shard);

class Journal {
 public:
  // Starts a new journal at `path` (truncating), its first line a header with the fingerprint.
  Journal(const std::string& path, const std::string& fingerprint, bool append);
  ~Journal();
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;
  // One line per record, flushed to disk before returning.
  void append(const std::vector<Record>& records);

 private:
  std::FILE* file_ = nullptr;
  std::string path_;
};

struct JournalContents {
  std::string fingerprint;
  std::vector<Record> records;
};
// Reads a journal; a torn last line (the process died mid-write) is ignored. Throws
// std::runtime_error naming the path and line for anything else.
JournalContents read_journal(const std::string& path);

// "I/N" with 0 <= I < N: this process runs the cases whose index % N == I.
struct Shard {
  int index = 0;
  int count = 1;
};
std::optional<Shard> parse_shard(const std::string& s);
std::vector<Case> shard_cases(const std::vector<Case>& cases, Shard shard);

}  // namespace fb
