// The modes live in core/ because the typed config names them; the scheduler re-exports them.
// What each mode means: scheduler/schedule_policy.h.
#pragma once
#include "core/mode.h"
