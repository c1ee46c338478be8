// Where psrt-launch writes its temporary files (the job's secret, an auto placement plan):
// $TMPDIR, else /tmp, checked before anything is started. A TMPDIR that is not there ended the
// launch in std::terminate (std::filesystem::temp_directory_path's error, after the placer had
// started), or in a message that named no TMPDIR.
#pragma once

#include <string>

namespace psrt::launch {

// Throws ConfigError naming TMPDIR and its value when it is not a folder this user can write in.
std::string temp_folder();

}  // namespace psrt::launch
