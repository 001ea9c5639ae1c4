// --dump DIR: each case's inputs and every kernel's outputs as NumPy .npy files, for checking against
// other tools. DIR/<case key>/inputs.Q.npy, naive.O.npy, flash.LSE.npy, reference.O.npy, ...
#pragma once

#include <string>
#include <vector>

#include "backend/backend.h"
#include "record.h"

namespace fb {

// One .npy (format 1.0). fp64 -> '<f8', fp32 -> '<f4', fp16 -> '<f2', bf16 -> '<f4' (NumPy has no
// bfloat16; every bf16 value is exact in fp32). Throws std::runtime_error naming the path.
void write_npy(const std::string& path, const HostTensor& t);

// Writes the prepared inputs and the kept outputs of each ok record's kernel and of the reference.
void dump_case(const std::string& dir, Backend& backend, const Case& c, const std::vector<Record>& records);

}  // namespace fb
