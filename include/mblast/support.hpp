#pragma once
// Small utilities every layer uses: content hashes, timestamps, mblast's own binary, percentiles.
#include <chrono>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace mblast {

// "2026-11-29T16:09:51.123Z"
std::string utc_now();

// This machine's host name ("localhost" where it cannot be read): ceilings caches are per host.
std::string host_name();

// Seconds of the steady clock since `start`.
double seconds_since(std::chrono::steady_clock::time_point start);

// Lower-case hex SHA-256 of data.
std::string sha256_hex(std::string_view data);

// The mblast binary that child processes run: $MBLAST_BINARY when set (a test binary names the
// real one), else this process's own executable.
std::filesystem::path mblast_binary();

// The q-th percentile (0..1) of non-empty values, interpolated linearly between neighbours: 0.5 is
// the median, the mean of the middle two for an even count.
double percentile(std::vector<double> values, double q);

}  // namespace mblast
