#pragma once
// Small utilities every layer uses: content hashes, timestamps, mblast's own binary.
#include <filesystem>
#include <string>
#include <string_view>

namespace mblast {

// "2026-11-29T16:09:51.123Z"
std::string utc_now();

// Lower-case hex SHA-256 of data.
std::string sha256_hex(std::string_view data);

// The mblast binary that child processes run: $MBLAST_BINARY when set (a test binary names the
// real one), else this process's own executable.
std::filesystem::path mblast_binary();

}  // namespace mblast
