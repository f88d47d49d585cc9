#pragma once
// Small utilities every layer uses: content hashes and timestamps.
#include <string>
#include <string_view>

namespace mblast {

// "2026-11-29T16:09:51.123Z"
std::string utc_now();

// Lower-case hex SHA-256 of data.
std::string sha256_hex(std::string_view data);

}  // namespace mblast
