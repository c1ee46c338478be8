// Asking a running psrt-placer for a plan.
#pragma once

#include <string>

#include "core/plan.h"
#include "core/status.h"
#include "placement/service/request.h"

namespace psrt::placement {

// Sends the request to `address` and waits up to `timeout_s` for the plan. An error names the
// placer and says what it answered, or that it did not answer in time.
Result<Plan> ask_placer(const std::string& address, const std::string& job_id,
                        const Request& request, double timeout_s);

}  // namespace psrt::placement
